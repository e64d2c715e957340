"""Benchmark: `trajbench explore` over 100 systems × 32 points, its build time and the page's load
time in headless chromium (prints figures; asserts nothing: the machine is shared).

Inputs: `--systems` submission trees of `--points` points each, every one written by the real
`trajbench submit` (tests/eval/explore/explore_trees.py's `Submitter`, over the submission
tests' run folders: official, judged and sealed, their summaries made by replay's own code from
records), a review on every third. The points are measured once per `--variants` (each its own
speed and engine) over the bundled sample built with enough repeats that every point is on the
frontier, and each system submits one variant's points under its own name, hardware, price and
power. So the build reads and checks 3,200 run folders as it would a real set of submissions.
Making the inputs takes minutes (100 submits); `--keep DIR` keeps them, and a later run with the
same `--keep` reuses them.

Load time is what a buyer waits for: from the navigation's start to the first view painted (the
page records `performance.now()` when its charts are in the DOM and after the next frame), over
`--loads` fresh tabs; beside it the page's main-thread CPU time (chromium's counters in thread
time), which a busy shared machine does not inflate.

Usage: .venv/bin/python tests/bench/bench_explore.py [--systems 100] [--points 32] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
sys.path[:0] = [str(TESTS / p) for p in ("", "replay", "eval", "eval/submission", "eval/explore")]

from devtools import Chromium  # noqa: E402
from evalruns import WordCounter  # noqa: E402
from explore_trees import Submitter, hardware, write_review  # noqa: E402

import traces  # noqa: E402
from eval import gate_verdicts  # noqa: E402
from eval.explore import build_explorer  # noqa: E402

ENGINES = ("vllm 0.9.1", "sglang 0.5.2", "trt-llm 1.1")
#: marks a --keep folder whose inputs are complete (a later run reuses them)
MADE = ".inputs-made"


def frontier_concurrencies(n: int, turns: int) -> list[int]:
    """n concurrencies from 1 up that can all be on a frontier over `turns` client turns: the
    smallest C of each number of rounds the C lanes need (ceil(turns / C)), evenly picked."""
    candidates = sorted({math.ceil(turns / r) for r in range(1, turns + 1)})
    if len(candidates) < n:
        return []
    return [candidates[round(k * (len(candidates) - 1) / max(1, n - 1))] for k in range(n)]


def sample_shards(folder: Path, points: int) -> tuple[Path, list[int]]:
    """The bundled sample with the fewest repeats whose client turns fit `points` frontier points."""
    sample = Path(traces.__file__).parent / "data" / "sample.jsonl"
    for repeats in range(1, 1000):
        out = folder / f"sample-x{repeats}"
        traces.build_shards(
            [str(sample)], out, traces.BuildOptions(name="sample", repeats=repeats), counter=WordCounter()
        )
        cs = frontier_concurrencies(points, sum(len(inst.turns) for inst in traces.Shards(out)))
        if cs:
            return out, cs
        shutil.rmtree(out)
    raise SystemExit(f"--points {points}: too many for the sample's turns")


def make_inputs(root: Path, systems: int, points: int, variants: int) -> None:
    shards, cs = sample_shards(root / "shards", points)
    (root / "measured").mkdir()
    maker = Submitter(shards, root / "measured")
    measured = []
    for v in range(variants):
        measured.append(maker.measure(cs, date="2026-01-01", speed=0.6 + 0.5 * v, engine_says=ENGINES[v % 3]))
        print(f"  variant {v + 1} of {variants}: {len(cs)} points measured (C = {cs[0]} … {cs[-1]})", flush=True)
    for i in range(systems):
        tree = root / "submissions" / f"s{i:03d}"
        count = [1, 2, 4, 8][i % 4]
        maker.submit(
            tree,
            measured[i % variants],
            submitter=f"vendor{i % 17:02d}",
            system=f"system{i:03d}",
            date=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
            trajbench=hardware(
                accelerator_type=["H200", "B200", "MI355X", "TPU-v6e"][i % 4],
                accelerator_count=count,
                price_per_hour_usd=None if i % 5 == 0 else 4.0 * count,
                power_watts=None if i % 7 == 0 else 700.0 * count,
            ),
        )
        if i % 3 == 0:
            write_review(tree, [(None, "all", i % 9 != 0, "the bench's verdict")])
        if (i + 1) % 10 == 0:
            print(f"  {i + 1} of {systems} submissions written", flush=True)
    (root / MADE).write_text(f"{systems} {points} {variants}\n", encoding="utf-8")


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--points", type=int, default=32)
    ap.add_argument("--variants", type=int, default=4, help="sets of measured points the systems share")
    ap.add_argument("--loads", type=int, default=5, help="fresh page loads to time")
    ap.add_argument("--keep", default=None, help="folder to keep the inputs and the site in (default: a temporary one)")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-explore-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        made = work / "in" / MADE
        if made.is_file() and made.read_text(encoding="utf-8").split() == [
            str(args.systems),
            str(args.points),
            str(args.variants),
        ]:
            print(f"inputs: {args.systems} systems × {args.points} points kept from an earlier run")
        else:
            shutil.rmtree(work / "in", ignore_errors=True)
            t0 = time.perf_counter()
            make_inputs(work / "in", args.systems, args.points, args.variants)
            print(f"inputs: {args.systems} systems × {args.points} points made in {time.perf_counter() - t0:.1f} s")

        cpu0, t0 = os.times(), time.perf_counter()
        site = build_explorer([work / "in" / "submissions"], work / "site", gates_of=gate_verdicts)
        wall, cpu1 = time.perf_counter() - t0, os.times()
        cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        data_mb = (work / "site" / "data.js").stat().st_size / 1e6
        print(
            f"build: {site.systems} systems, {site.points} points in {wall:.2f} s wall, {cpu:.2f} s CPU; "
            f"data.js {data_mb:.2f} MB, the folder {size_mb(work / 'site'):.2f} MB"
        )

        drawn, painted, cpu_ms = [], [], []
        with Chromium(work / "chromium", width=1280, height=900) as page:
            for _ in range(args.loads):
                page.open(site.index.resolve().as_uri(), ready="document.body.dataset.painted === '1'", timeout=60)
                drawn.append(float(page.evaluate("window.trajbenchExplore.drawnMs")))
                painted.append(float(page.evaluate("window.trajbenchExplore.paintedMs")))
                cpu_ms.append(1000 * page.metrics()["TaskDuration"])
                markers = len(page.evaluate("window.trajbenchExplore.drawn('pareto')"))
                errors = page.errors()
        print(
            f"load, {len(painted)} fresh tabs, median (min–max): navigation start → first view painted "
            f"{statistics.median(painted):.0f} ms ({min(painted):.0f}–{max(painted):.0f}); → in the DOM "
            f"{statistics.median(drawn):.0f} ms; the page's main-thread CPU {statistics.median(cpu_ms):.0f} ms "
            f"({min(cpu_ms):.0f}–{max(cpu_ms):.0f}); {markers:,} points on the Pareto chart; script errors: {len(errors)}"
        )
        print(
            f"machine load average while measuring: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"
        )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
