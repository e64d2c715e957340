"""Record size figures (prints, asserts nothing): bytes per turn of records.jsonl in the old form
(chunk times as decimal ns), the packed form, and the packed form compressed (records.jsonl.zst).

    .venv/bin/python tests/bench/bench_records.py [--osl 400] [--trajectories 4] [--fixture FILE]

Replays the coding set against the zero-latency simulator with `--osl` tokens per answer, so the
content and the token stream are real; the zero-latency server answers in bursts, so the same
records are also measured with their chunk times re-spaced like a paced engine (5 ms ± 0.3 ms
between chunks), the case the 1.5 KB-per-turn target is about (docs/files.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import benchdata
import zstandard

import traces
from replay.config import RunConfig
from replay.results.records import _LEVEL as ZSTD_LEVEL
from replay.results.records import Record, read_records, record_line, records_path
from replay.run import run_replay
from replay.sim import SimConfig, start_simulator


def _json(r: Record) -> str:
    return record_line(r).decode("utf-8")


def _old_line(r: Record) -> str:
    return json.dumps(asdict(r), ensure_ascii=False, separators=(",", ":"))


def _sizes(records: list[Record], label: str, cmd: str) -> None:
    n = len(records)
    tokens = sum(len(r.chunk_ns) for r in records) / n
    old = "".join(_old_line(r) + "\n" for r in records).encode()
    new = "".join(_json(r) + "\n" for r in records).encode()
    zst = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(new)  # what a finished run writes
    print(f"{label}: {n} turns, {tokens:.0f} chunks/turn  [{cmd}]")
    print(f"  old records.jsonl (decimal ns)   {len(old) / n:8.0f} B/turn")
    print(f"  packed records.jsonl             {len(new) / n:8.0f} B/turn")
    print(f"  packed records.jsonl.zst         {len(zst) / n:8.0f} B/turn")
    t0 = time.perf_counter()
    for r in records:
        _old_line(r)
    t1 = time.perf_counter()
    for r in records:
        _json(r)
    t2 = time.perf_counter()
    print(f"  writer CPU: old line {1e6 * (t1 - t0) / n:.0f} µs/turn, packed line {1e6 * (t2 - t1) / n:.0f} µs/turn")


def _paced(r: Record, rng: random.Random) -> Record:
    if not r.chunk_ns:
        return r
    t = r.chunk_ns[0]
    out = [t]
    for _ in r.chunk_ns[1:]:
        t += 5_000_000 + rng.randint(-300_000, 300_000) + rng.randint(0, 999)
        out.append(t)
    return replace(r, chunk_ns=tuple(out), t_last_ns=out[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--osl", type=int, default=400, help="tokens per answer")
    ap.add_argument("--trajectories", type=int, default=4, help="trajectory instances replayed")
    benchdata.add_argument(ap)
    args = ap.parse_args()
    cmd = f"tests/bench/bench_records.py --osl {args.osl} --trajectories {args.trajectories}"
    with tempfile.TemporaryDirectory() as tmp:
        src = benchdata.coding_source(Path(tmp), args.fixture)
        shards = Path(tmp) / "shards"
        traces.build_shards([str(src)], shards, traces.BuildOptions(name="bench"))
        sim_opts = SimConfig(
            osl_mean=args.osl, osl_cv=0.0, step_base_ms=0.0, prefill_ms_per_token=0.0, batch_ms_per_seq=0.0
        )
        with start_simulator(sim_opts) as sim:
            cfg = RunConfig(
                shards=str(shards),
                endpoint=sim.base_url,
                concurrency=8,
                num_trajectories=args.trajectories,
                inject_delays=False,
                out=str(Path(tmp) / "run"),
                progress="none",
            )
            run_dir = asyncio.run(run_replay(cfg))
        records = list(read_records(run_dir))
        on_disk = records_path(run_dir).stat().st_size
        print(f"dataset {src.name}; the run's own {records_path(run_dir).name}: {on_disk / len(records):.0f} B/turn")
        _sizes(records, "zero-latency simulator (chunks in bursts)", cmd)
        rng = random.Random(0)
        _sizes([_paced(r, rng) for r in records], "same records, chunks re-spaced 5 ms ± 0.3 ms", cmd)


if __name__ == "__main__":
    main()
