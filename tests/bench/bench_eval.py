"""Benchmark: how long the eval gates take on a run the size of an official one (prints figures).

A run of `--repeats` passes over the 20 coding fixture trajectories (1,007 turns each; 30 passes ≈
the 30,335 client turns of the official set) answered by the oracle, scored by `score_run` and
`osl_gate`. Usage: .venv/bin/python tests/bench/bench_eval.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "eval"))

from evalruns import WordCounter, write_run  # noqa: E402

import traces  # noqa: E402
from eval.inline import score_run  # noqa: E402
from eval.osl import osl_gate  # noqa: E402

FIXTURE = HERE.parents[2] / "shared" / "fixtures" / "mlperf_coding_20.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        shards = Path(tmp) / "shards"
        traces.build_shards([str(FIXTURE)], shards, traces.BuildOptions(name="c20"), counter=WordCounter())
        run = write_run(Path(tmp) / "run", shards, repeats=args.repeats)
        t0 = time.perf_counter()
        res = score_run(run)
        t1 = time.perf_counter()
        osl_gate(run)
        t2 = time.perf_counter()
        size = (run / "scores.json").stat().st_size
        print(
            f"turns {res['turns']['issued']}: eval inline {t1 - t0:.2f} s ({1e6 * (t1 - t0) / res['turns']['issued']:.0f} us/turn), "
            f"eval osl {t2 - t1:.2f} s, scores.json {size / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
