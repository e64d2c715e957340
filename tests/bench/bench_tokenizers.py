"""Tokenizer throughput on a coding set: prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_tokenizers.py [--hf DIR] [--fixture FILE]

The coding set is the synthetic one (benchdata.py) unless --fixture names another mlperf-jsonl
file, e.g. ../shared/fixtures/mlperf_coding_20.jsonl.

For each tokenizer: raw `encode` speed over all message text, and the build's incremental count
(ISL, delta and answer tokens of every client turn) in tokens of prompt text processed per second.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import benchdata

from traces import BuildOptions, read_sources
from traces.shards.build import instance_rows
from traces.tokenizers import load_tokenizer


def bench(spec: str, fixture: Path) -> None:
    t0 = time.perf_counter()
    tok = load_tokenizer(spec)
    load_s = time.perf_counter() - t0
    text = fixture.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    n = len(tok.encode(text))
    enc_s = time.perf_counter() - t0
    trajs = list(read_sources([str(fixture)], "mlperf-jsonl"))
    opts = BuildOptions()
    t0 = time.perf_counter()
    for traj in trajs:
        instance_rows(traj, 1, opts, None)
    base_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    turns = isl_sum = deltas = 0
    for traj in trajs:
        for row in instance_rows(traj, 1, opts, tok):
            turns += 1
            isl_sum += row["isl_tokens"]
            deltas += row["delta_tokens"]
    dt = time.perf_counter() - t0
    tok_s = max(dt - base_s, 1e-9)  # the tokenizer's share of the build pass
    print(
        f"{spec}: build pass {turns} turns in {dt:.2f} s (without tokenizer {base_s:.2f} s); tokenizer share {tok_s:.2f} s = "
        f"{deltas / tok_s:,.0f} new prompt tok/s, {isl_sum / tok_s:,.0f} ISL tok/s (ISL sum {isl_sum:,}), {turns / tok_s:,.0f} turns/s"
    )
    print(
        f"{spec}: load {load_s:.2f} s; raw encode of the fixture file: {n:,} tokens in {enc_s:.2f} s = {n / enc_s:,.0f} tok/s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hf", default=None, help="a local Hugging Face model folder to bench too")
    benchdata.add_argument(ap)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = benchdata.coding_source(Path(tmp), args.fixture)
        bench("qwen3.6", src)
        if args.hf:
            bench(f"hf:{args.hf}", src)


if __name__ == "__main__":
    main()
