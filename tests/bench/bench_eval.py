"""Benchmark: how long the eval gates take on a run the size of an official one (prints figures).

A run of `--repeats` passes over a coding set answered by the oracle, scored by `score_run` and
`osl_gate`. The set is the synthetic coding set (benchdata.py: 607 client turns; 50 passes ≈ the
30,335 client turns of the official set) unless --fixture names another mlperf-jsonl file, e.g.
../shared/fixtures/mlperf_coding_20.jsonl (1,007 turns; 30 passes).
Usage: .venv/bin/python tests/bench/bench_eval.py [--repeats 50] [--fixture FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "eval"))

import benchdata  # noqa: E402
from evalruns import WordCounter, write_run  # noqa: E402

import traces  # noqa: E402
from eval.inline import score_run  # noqa: E402
from eval.osl import osl_gate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=50)
    benchdata.add_argument(ap)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = benchdata.coding_source(Path(tmp), args.fixture)
        shards = Path(tmp) / "shards"
        traces.build_shards([str(src)], shards, traces.BuildOptions(name="coding"), counter=WordCounter())
        run = write_run(Path(tmp) / "run", shards, repeats=args.repeats)
        t0 = time.perf_counter()
        res = score_run(run)
        t1 = time.perf_counter()
        osl_gate(run)
        t2 = time.perf_counter()
        size = (run / "scores.json").stat().st_size
        issued = res.to_json()["turns"]["issued"]  # score_run returns Scores; its JSON is scores.json
        print(
            f"turns {issued}: eval inline {t1 - t0:.2f} s ({1e6 * (t1 - t0) / issued:.0f} us/turn), "
            f"eval osl {t2 - t1:.2f} s, scores.json {size / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
