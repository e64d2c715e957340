"""Benchmark of the streaming client against agentic-bench (issue 18's targets): prints figures.

Runs `replay.calibrate` — a calibration server in its own process (pinned to one CPU, the clients
to the others), client CPU from `time.process_time()` of the client processes only — in its two
phases: saturated (zero latency, 256 chunks a turn) and paced like an engine (first chunk after
50 ms, then one every 5 ms, 64 a turn). Beside our client, against the same server settings:
  - agentic-bench (PyPI; aiohttp) when an interpreter that has it is given (`--compare-python`,
    or env AGENTIC_BENCH_PYTHON); set one up with
        python -m venv /some/dir && /some/dir/bin/pip install agentic-bench
  - our client on asyncio's own loop (a replay runs on uvloop where installed).

Targets:
  1. client CPU per turn ≥ 2× lower than agentic-bench's, in both phases (C=128);
  2. ≤ 1.0 ms of client CPU per saturated 256-chunk turn;
  3. TTFT error p99 ≤ 2 ms in the paced phase at C=128, and with --workers at C=512.

    .venv/bin/python tests/bench/bench_client.py [--concurrency 128] [--turns 2048] [--workers 1]
        [--compare-python PATH] [--json out.json]

Wall-clock figures (timing error) depend on what else runs on the machine; CPU per turn is the
robust figure. Run on an idle machine for the timing target.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replay.calibrate import Paced, calibrate, format_rows, layout_line, rows_to_json
from replay.client.eventloop import event_loop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--turns", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--compare-python", default=os.environ.get("AGENTIC_BENCH_PYTHON"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    loop = event_loop()
    compare = ["trajbench-asyncio"] if loop != "asyncio" else []
    if a.compare_python:
        compare.insert(0, "agentic-bench")
    else:
        print("agentic-bench: skipped (pass --compare-python or set AGENTIC_BENCH_PYTHON)", file=sys.stderr)
    rows = calibrate(
        concurrency=a.concurrency,
        workers=a.workers,
        turns=a.turns,
        tokens=a.tokens,
        compare=tuple(compare),
        compare_python=a.compare_python,
        echo=lambda s: print(s, file=sys.stderr),
    )
    for line in format_rows(rows):
        print(line)
    print(layout_line(True, Paced()))
    by = {(r.phase, r.client, r.workers): r for r in rows}
    ours = f"trajbench-{loop}"
    for phase in ("saturated", "paced"):
        us, ab = by[(phase, ours, 1)], by.get((phase, "agentic-bench", 1))
        if ab is not None:
            print(
                f"target 1 ({phase}): agentic-bench CPU/turn ÷ ours = "
                f"{ab.cpu_per_turn_ms:.2f} ÷ {us.cpu_per_turn_ms:.2f} = {ab.cpu_per_turn_ms / us.cpu_per_turn_ms:.2f}x (want >= 2)"
            )
    sat = by[("saturated", ours, 1)]
    print(f"target 2: {sat.cpu_per_turn_ms:.3f} ms CPU per saturated {a.tokens}-chunk turn (want <= 1.0)")
    for w in range(1, a.workers + 1):
        paced = by[("paced", ours, w)]
        print(
            f"target 3: paced TTFT error p50/p99 = {paced.ttft_err_p50_ms:.3f}/{paced.ttft_err_p99_ms:.3f} ms "
            f"at C={a.concurrency}, {w} worker(s), {paced.cores_used:.2f} cores (want p99 <= 2)"
        )
    if a.json:
        Path(a.json).write_text(rows_to_json(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
