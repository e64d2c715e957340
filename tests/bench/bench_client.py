"""Benchmark of the streaming client (replay.client over replay.transport): prints figures.

Runs `replay.calibrate` — a zero-latency `replay.calserver` in its own process, client CPU from
`time.process_time()` of the client processes only — with our client and, side by side against
the same server settings:
  - agentic-bench (PyPI; aiohttp, its own per-turn code path) when an interpreter that has it is
    given (`--compare-python`, or env AGENTIC_BENCH_PYTHON); set one up with
        python -m venv /some/dir && /some/dir/bin/pip install agentic-bench
  - httpx with its default h11 transport (the "before"), and our client on uvloop when installed.

Targets (issue 3, "Calibration"):
  1. chunks per client CPU-second ≥ 2× agentic-bench at concurrency 128 (throughput phase);
  2. TTFT error p99 ≤ 2 ms at concurrency 128 while the client uses < 50 % of a core (timing phase);
  3. throughput scales with --workers up to the cores available.
The MLPerf Endpoints reference client has no installable package here, so it is not compared.

    .venv/bin/python tests/bench/bench_client.py [--concurrency 128] [--turns 2048] [--workers 2]
        [--compare-python PATH] [--json out.json]

Wall-clock figures (chunks/s, timing error) depend on what else runs on the machine; CPU per
chunk is the robust figure. Run on an idle machine for the timing target.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replay.calibrate import calibrate, format_rows, rows_to_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--turns", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--compare-python", default=os.environ.get("AGENTIC_BENCH_PYTHON"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    compare = ["httpx-default"]
    try:
        import uvloop  # noqa: F401

        compare.append("trajbench-uvloop")
    except ImportError:
        pass
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
    by = {(r.phase, r.client, r.workers): r for r in rows}
    ours = by[("throughput", "trajbench", 1)]
    ab = by.get(("throughput", "agentic-bench", 1))
    if ab is not None:
        print(
            f"target 1: chunks/CPU-s ratio vs agentic-bench = {ours.chunks_per_cpu_s / ab.chunks_per_cpu_s:.2f}x (want >= 2)"
        )
    timing = by[("timing", "trajbench", 1)]
    print(
        f"target 2: TTFT error p99 = {timing.ttft_err_p99_ms:.3f} ms at {timing.cores_used:.2f} cores (want <= 2 ms at < 0.5)"
    )
    scaling = [by[("throughput", "trajbench", w)] for w in range(1, a.workers + 1)]
    print(
        "target 3: chunks/s by workers = "
        + ", ".join(f"W={r.workers}: {r.chunks_per_s:.0f}" for r in scaling)
        + f" (cores: {os.cpu_count()}, shared by the client workers and as many server processes)"
    )
    if a.json:
        Path(a.json).write_text(rows_to_json(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
