"""Benchmark: `trajbench explore` over 100 systems × 32 points, its build time and the page's load
time in headless chromium (prints figures; asserts nothing: the machine is shared).

Inputs: `--systems` submission trees of `--points` points each, in the shape docs/explore.md
documents (manifest, system description, a review on every third, each point's run folder). The
run folders are real: run.json and a result summary that replay's own code made from records
(one per concurrency, `make_run`), copied into every system with its throughput and per-user speed
scaled by the system's factor, so the systems' curves differ. So the build reads and checks
3,200 run folders as it would a real set of submissions.

Load time is what a buyer waits for: from the navigation's start to the first view painted (the
page records `performance.now()` when its charts are in the DOM and after the next frame), over
`--loads` fresh tabs; beside it the page's main-thread CPU time (chromium's counters in thread
time), which a busy shared machine does not inflate.

Usage: .venv/bin/python tests/bench/bench_explore.py [--systems 100] [--points 32] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "replay"), str(HERE.parent / "eval" / "explore")]

from devtools import Chromium  # noqa: E402
from explore_trees import description, make_run  # noqa: E402

from eval import gate_verdicts  # noqa: E402
from eval.explore import build_explorer  # noqa: E402


def concurrencies(n: int) -> list[int]:
    """n distinct concurrencies from 1 up, log-spaced as a sweep's (1, 2, 3, … 512 for 32)."""
    out: list[int] = []
    k = 0
    while len(out) < n:
        c = max(len(out) + 1, round(2 ** (k * 9 / max(1, n - 1))))
        if not out or c > out[-1]:
            out.append(c)
        k += 1
    return out


def make_inputs(root: Path, systems: int, points: int) -> None:
    templates = root / "templates"
    cs = concurrencies(points)
    for c in cs:
        make_run(templates / f"c{c:04d}", c)
    for i in range(systems):
        tree = root / "submissions" / f"s{i:03d}"
        submitter, system = f"vendor{i % 17:02d}", f"system{i:03d}"
        throughput, per_user = 0.5 + (i * 37 % 100) / 40, 0.6 + (i * 53 % 100) / 60
        results = tree / "closed" / submitter / "results" / system / "agentic"
        manifest_points = []
        for c in cs:
            run = results / f"c{c:04d}" / "trajbench"
            run.mkdir(parents=True)
            shutil.copyfile(templates / f"c{c:04d}" / "run.json", run / "run.json")
            shutil.copyfile(templates / f"c{c:04d}" / "report.txt", run / "report.txt")
            summary = json.loads((templates / f"c{c:04d}" / "result_summary.json").read_text(encoding="utf-8"))
            summary["trajbench"]["throughput"]["output_tokens_per_s"] *= throughput
            summary["trajbench"]["interactivity"]["e2e_interactivity"] *= per_user
            (run / "result_summary.json").write_text(json.dumps(summary), encoding="utf-8")
            manifest_points.append({"scenario": run.parent.relative_to(tree).as_posix(), "concurrency": c})
        manifest = {
            "submitter": submitter,
            "system": system,
            "profile": "kimi-k3",
            "submission_date": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
            "division": "closed",
            "engine": ["vllm 0.9.1", "sglang 0.5.2", "trt-llm 1.1"][i % 3],
            "swebench_mean": 0.7,
            "points": manifest_points,
        }
        (tree / "trajbench-submission.json").write_text(json.dumps(manifest), encoding="utf-8")
        desc = description(
            accelerator_type=["H200", "B200", "MI355X", "TPU v6e"][i % 4],
            accelerator_count=[1, 2, 4, 8][i % 4],
            price_per_hour_usd=None if i % 5 == 0 else 4.0 * [1, 2, 4, 8][i % 4],
            power_watts=None if i % 7 == 0 else 700.0 * [1, 2, 4, 8][i % 4],
        )
        (tree / "closed" / submitter / "systems").mkdir(parents=True)
        (tree / "closed" / submitter / "systems" / f"{system}.json").write_text(json.dumps(desc), encoding="utf-8")
        if i % 3 == 0:
            review = {"passed": i % 9 != 0, "checks": [{"point": "submission", "check": "all", "passed": i % 9 != 0}]}
            (tree / "review.json").write_text(json.dumps(review), encoding="utf-8")


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--points", type=int, default=32)
    ap.add_argument("--loads", type=int, default=5, help="fresh page loads to time")
    ap.add_argument("--keep", default=None, help="folder to keep the inputs and the site in (default: a temporary one)")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-explore-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        make_inputs(work / "in", args.systems, args.points)
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
