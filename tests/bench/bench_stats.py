"""Benchmark: synth → build → stats on the full-size synthetic set; prints time and peak RSS.

Each phase runs as its own process (the real CLI), so its peak RSS is its own (wait4 rusage).

    .venv/bin/python tests/bench/bench_stats.py                      # scale 1, character units
    .venv/bin/python tests/bench/bench_stats.py --tokenizer qwen3.6  # token columns and tokens
    .venv/bin/python tests/bench/bench_stats.py --scale 0.1 --keep out/bench

Not a test: it prints figures and asserts nothing (the machine is shared; timings vary).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(label: str, argv: list[str]) -> dict[str, float | str]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{label} failed ({proc.returncode}):\n{out}")
    return {
        "phase": label,
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "output": out,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--tokenizer", default=None, help="e.g. qwen3.6: build token columns and count reuse in tokens")
    ap.add_argument("--keep", default=None, help="folder to keep the outputs in (default: a temporary one)")
    ap.add_argument("-c", "--concurrency", type=int, default=32)
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-stats-"))
    work.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "cli"]
    data, shards, stats = work / "synthetic.jsonl", work / "synthetic", work / "stats"
    synth = [*cli, "traces", "synth", "--out", str(data), "--scale", str(args.scale)]
    import cli as cli_module

    if "synth" not in cli_module.traces_group.commands:  # the command lands separately
        synth = [
            sys.executable,
            "-c",
            f"from traces.synth import synthesize; synthesize({str(data)!r}, scale={args.scale})",
        ]
    build = [*cli, "traces", "build", str(data), "--out", str(shards), "--overwrite"]
    if args.tokenizer:
        build += ["--tokenizer", args.tokenizer]
    phases = [
        run("synth", synth),
        run("build", build),
        run("stats", [*cli, "traces", "stats", str(shards), "--out", str(stats), "-c", str(args.concurrency)]),
    ]
    s = json.loads((stats / "stats.json").read_text())
    print(
        f"scale {args.scale}: {s['domains']['all']['trajectories']} trajectories, {s['domains']['all']['client_turns']} client turns; "
        f"units {s['units']}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'phase':<8}{'wall s':>10}{'cpu s':>10}{'peak RSS MB':>14}")
    for p in phases:
        print(f"{p['phase']:<8}{p['wall_s']:>10}{p['cpu_s']:>10}{p['peak_rss_mb']:>14}")
    ex = s["reuse_exact_within"]
    print(
        f"exact within-trajectory reuse {ex['fraction']:.2%} of {ex['unit']}; "
        f"LRU unlimited {s['lru']['unlimited']:.2%} at C={s['lru']['concurrency']}"
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
