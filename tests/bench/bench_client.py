"""Benchmark of the streaming client against agentic-bench (issues 18 and 30): prints figures.

Runs `trajbench replay calibrate` — a calibration server in its own process (pinned to one CPU,
the clients to the others), client CPU of the client processes only — on the benchmark's own
prompts (`--shards`: the shared fixture's when `--fixture` names it, else the synthetic coding
set), so our client is `trajbench replay run` itself: its CPU per turn is read over the streaming
phase and over the whole process (start-up, shard verification, preflight, scoring), as a user
pays for it. Beside it, on the same server settings and instances:
  - agentic-bench (PyPI; aiohttp) when an interpreter that has it is given (`--compare-python`,
    or env AGENTIC_BENCH_PYTHON); set one up with
        python -m venv /some/dir && /some/dir/bin/pip install agentic-bench
    (its figure is its streaming phase: its driver replays the same instances, turn by turn);
  - the floor (`--compare floor`): a bare client on the same loop that sends the same bodies and
    only stamps its reads; each client's CPU per turn above it is printed too.

Targets (paced phase: first chunk after 50 ms, then one every 5 ms, 64 a turn; C=128):
  1. client CPU per turn ≥ 2× lower than agentic-bench's;
  2. TTFT error p99 ≤ 2 ms (on a 2-core machine one client core may not hold it at C=128:
     `bench_capacity.py` finds the largest concurrency that does).

    .venv/bin/python tests/bench/bench_client.py [--fixture ../shared/fixtures/mlperf_coding_20.jsonl]
        [--concurrency 128] [--trajectories 256] [--phase paced] [--compare-python PATH] [--json out.json]

Wall-clock figures (timing error) depend on what else runs on the machine; CPU per turn is the
robust figure. Run on an idle machine for the timing target.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchdata

from replay.calibrate import Paced, calibrate, format_rows, layout_line, rows_to_json
from replay.client.eventloop import event_loop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    benchdata.add_argument(ap)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--trajectories", type=int, default=None, help="instances per run (default: two per slot)")
    ap.add_argument("--phase", action="append", choices=("saturated", "paced"), default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--compare-python", default=os.environ.get("AGENTIC_BENCH_PYTHON"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    compare = ["floor"] + (["agentic-bench"] if a.compare_python else [])
    if not a.compare_python:
        print("agentic-bench: skipped (pass --compare-python or set AGENTIC_BENCH_PYTHON)", file=sys.stderr)
    phases = tuple(a.phase or ("saturated", "paced"))
    with tempfile.TemporaryDirectory(prefix="bench-client-") as tmp:
        shards = benchdata.coding_shards(Path(tmp), a.fixture)
        rows = calibrate(
            concurrency=a.concurrency,
            workers=a.workers,
            compare=tuple(compare),
            compare_python=a.compare_python,
            shards=shards,
            trajectories=a.trajectories,
            phases=phases,
            echo=lambda s: print(s, file=sys.stderr),
        )
    print(f"[tests/bench/bench_client.py {' '.join(sys.argv[1:])}]")
    for line in format_rows(rows):
        print(line)
    print(layout_line(True, Paced()))
    by = {(r.phase, r.client, r.workers): r for r in rows}
    ours = f"trajbench-{event_loop()}"
    for phase in phases:
        us, ab = by[(phase, ours, 1)], by.get((phase, "agentic-bench", 1))
        if ab is not None:
            print(
                f"target 1 ({phase}): agentic-bench CPU/turn ÷ ours = {ab.cpu_per_turn_ms:.2f} ÷ "
                f"{us.cpu_per_turn_ms:.2f} = {ab.cpu_per_turn_ms / us.cpu_per_turn_ms:.2f}x streaming; "
                + (
                    f"÷ our whole process {whole:.2f} = {ab.cpu_per_turn_ms / whole:.2f}x (want >= 2)"
                    if (whole := us.process_cpu_per_turn_ms)
                    else "our whole process: n/a (want >= 2)"
                )
            )
        floor = by[(phase, "floor", 1)]
        for r in (us, ab):
            if r is not None:
                above = r.cpu_per_turn_ms - floor.cpu_per_turn_ms
                print(f"{phase}: {r.client} CPU/turn above the floor ({floor.cpu_per_turn_ms:.2f} ms): {above:.2f} ms")
    if "paced" in phases:
        for w in range(1, a.workers + 1):
            paced = by[("paced", ours, w)]
            print(
                f"target 2: paced TTFT error p50/p99 = {paced.ttft_err_p50_ms:.2f}/{paced.ttft_err_p99_ms:.2f} ms "
                f"(first wave p99 {paced.first_ttft_err_p99_ms:.2f}) at C={a.concurrency}, {w} worker(s), "
                f"{paced.cores_used:.2f} client cores, server {paced.server_cores:.2f} cores (want p99 <= 2)"
            )
    if a.json:
        Path(a.json).write_text(rows_to_json(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
