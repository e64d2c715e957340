"""Benchmark of `traces build`: time, peak RSS and bytes on disk for a coding set and for that set
replicated N× with new conversation ids (default 30×, ~36k rows for the synthetic coding set).

    .venv/bin/python tests/bench/bench_build.py [--copies 30] [--fixture FILE] [--jobs 1,2] [--tokenizer qwen3.6]

The coding set is the synthetic one (benchdata.py) unless --fixture names another mlperf-jsonl
file, e.g. ../shared/fixtures/mlperf_coding_20.jsonl.

The claim it checks: peak RSS follows the largest trajectory, not the dataset size (each build
runs in a fresh child process so its peak RSS is its own; with --jobs N > 1, the largest of the
parent's and its workers' peaks), and that `--jobs N` writes the same bytes as `--jobs 1`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import benchdata

CHILD = """
import resource, sys, time
from traces import BuildOptions, build_shards
counter = None
if sys.argv[4] != "-":
    from traces.tokenizers import load_tokenizer
    counter = load_tokenizer(sys.argv[4])
t = time.perf_counter()
build_shards([sys.argv[1]], sys.argv[2], BuildOptions(name="bench"), counter=counter, jobs=int(sys.argv[3]))
rss = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(time.perf_counter() - t, rss)
"""


def replicate(src: Path, dst: Path, copies: int) -> int:
    lines = src.read_text("utf-8").splitlines()
    n = 0
    with dst.open("w", encoding="utf-8") as out:
        for k in range(copies):
            for line in lines:
                row = json.loads(line)
                row["conversation_id"] = f"{row['conversation_id']}__copy{k:03d}"
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
    return n


def measure(src: Path, out: Path, jobs: int = 1, tokenizer: str | None = None) -> tuple[float, float, int]:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(src), str(out), str(jobs), tokenizer or "-"],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds, rss_kb = res.stdout.split()
    size = sum(p.stat().st_size for p in out.iterdir())
    return float(seconds), int(rss_kb) / 1024, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=30)
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs values to measure")
    ap.add_argument("--tokenizer", default=None, help="fill token columns with this tokenizer (e.g. qwen3.6)")
    benchdata.add_argument(ap)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = benchdata.coding_source(Path(tmp), args.fixture)
        n_src = sum(1 for _ in src.open("rb"))
        n_traj = len({json.loads(line)["conversation_id"] for line in src.open("rb")})
        big = Path(tmp) / "replicated.jsonl"
        rows = replicate(src, big, args.copies)
        base = subprocess.run(
            [
                sys.executable,
                "-c",
                "import traces, resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        print(f"python + trajbench import baseline RSS: {int(base.stdout) / 1024:.0f} MiB")
        cmd = f"tests/bench/bench_build.py --copies {args.copies} --jobs {args.jobs}" + (
            f" --tokenizer {args.tokenizer}" if args.tokenizer else ""
        )
        print(f"[{cmd}]  tokenizer: {args.tokenizer or 'none'}")
        print(
            f"{'input':<28}{'rows':>8}{'jobs':>5}{'raw MiB':>10}{'shards MiB':>12}{'ratio':>8}{'build s':>9}{'peak RSS MiB':>14}"
        )
        for label, path, n in ((f"{src.stem} ({n_traj} traj)", src, n_src), (f"... x{args.copies}", big, rows)):
            first: dict[str, bytes] | None = None
            for jobs in (int(j) for j in args.jobs.split(",")):
                out = Path(tmp) / f"out-{n}-j{jobs}"
                seconds, rss, size = measure(path, out, jobs, args.tokenizer)
                files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
                same = "" if first is None else ("  same bytes as the first" if files == first else "  DIFFERENT BYTES")
                first = first or files
                raw = path.stat().st_size
                print(
                    f"{label:<28}{n:>8}{jobs:>5}{raw / 2**20:>10.1f}{size / 2**20:>12.1f}{raw / size:>8.1f}{seconds:>9.2f}{rss:>14.0f}{same}"
                )


if __name__ == "__main__":
    main()
