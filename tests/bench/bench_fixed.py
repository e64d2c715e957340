"""Benchmark: the fixed costs of a replay, besides streaming (prints figures, asserts nothing).

- start-up: `trajbench --help` and `python -c "import cli"`, wall time of fresh processes, and
  `trajbench replay run` up to its first contact with the endpoint (a closed port: the options,
  the imports, the shards opened and verified, then the preflight's refused connection);
- shard verification as a replay does it: the manifest read, every shard file hashed, the footers
  read (`instance_turns`), then every instance read by the slots; time and bytes read from files
  (`rchar` of /proc/self/io: every read and pread, from disk or page cache);
- scoring one run folder: `jobs.evaluate_point` (inline accuracy, then the OSL gate), on a fresh
  copy of the folder each time.

Every figure is the median of --repeat fresh processes, run with PYTHONPATH=--tree (default:
this tree), so another checkout (the code before a change) is measured by the same script. The
shards are built from --fixture (default ../shared/fixtures/mlperf_coding_20.jsonl when it
exists, else the synthetic coding set of benchdata.py); the run folder comes from
`trajbench replay run SHARDS --no-delays --trajectories 128 -c 128 --progress none --out DIR`
against the embedded simulator, unless --run-dir names one.
Usage: .venv/bin/python tests/bench/bench_fixed.py [--fixture FILE] [--tree DIR] [--repeat 5]
       [--shards DIR] [--run-dir DIR] [--trajectories 128]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import benchdata  # noqa: E402

OFFICIAL_EXAMPLE = ROOT.parent / "shared" / "fixtures" / "mlperf_coding_20.jsonl"
CLOSED = "http://127.0.0.1:9"

#: What a replay reads of its shards before and while it streams, in the tree measured: the
#: slots reuse the run's verified `Shards` where that tree's LocalBackend takes it, else open
#: their own (the code before this benchmark's change).
VERIFY = """
import inspect, json, sys, time
def rchar():
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
import traces
from replay.loop import backend
from replay.run import instance_turns
shards_dir = sys.argv[1]
r0, t0 = rchar(), time.perf_counter()
shards = traces.Shards(shards_dir)
v = traces.verify_shards(shards)
per_instance = instance_turns(shards)
r1, t1 = rchar(), time.perf_counter()
slots = shards if "shards" in inspect.signature(backend.LocalBackend).parameters else traces.Shards(shards_dir)
turns = sum(len(slots.instance(k).turns) for k in range(len(slots)))
r2, t2 = rchar(), time.perf_counter()
print(json.dumps({"bytes": v.bytes, "start_s": t1 - t0, "start_read": r1 - r0, "slots_s": t2 - t1,
                  "slots_read": r2 - r1, "turns": turns}))
"""

SCORE = """
import json, sys, time
import jobs
t0 = time.perf_counter()
verdict = jobs.evaluate_point(sys.argv[1], "official")
print(json.dumps({"s": time.perf_counter() - t0, "problems": verdict.problems}))
"""


def env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "100"}


def wall(argv: list[str], tree: Path, repeat: int, ok: tuple[int, ...] = (0,)) -> float:
    """Median wall seconds of `argv` as a fresh process."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env(tree), capture_output=True, text=True, cwd=tree)
        times.append(time.perf_counter() - start)
        if done.returncode not in ok:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return statistics.median(times)


def child(code: str, args: list[str], tree: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", code, *args], env=env(tree), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    out: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return out


def trajbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", *args]


def build_shards(folder: Path, fixture: str | None) -> Path:
    source = Path(fixture) if fixture else OFFICIAL_EXAMPLE if OFFICIAL_EXAMPLE.is_file() else None
    if source is None:
        source = benchdata.coding_source(folder, None)
    out = folder / "shards"
    subprocess.run(
        trajbench("traces", "build", str(source), "--out", str(out), "--progress", "none"),
        env=env(ROOT),
        check=True,
        capture_output=True,
    )
    print(f"shards: trajbench traces build {source} --out SHARDS")
    return out


def make_run(folder: Path, shards: Path, trajectories: int) -> Path:
    out = folder / "run"
    argv = trajbench(
        "replay", "run", str(shards), "--no-delays", "--trajectories", str(trajectories),
        "-c", "128", "--progress", "none", "--out", str(out),
    )  # fmt: skip
    done = subprocess.run(argv, env=env(ROOT), capture_output=True, text=True)
    if not (out / "run.json").is_file():
        raise SystemExit(done.stderr[-3000:])
    print(
        f"run folder: trajbench replay run SHARDS --no-delays --trajectories {trajectories} -c 128 --progress none --out RUN"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    benchdata.add_argument(ap)
    ap.add_argument("--tree", default=str(ROOT), help="source tree to measure (PYTHONPATH of every child)")
    ap.add_argument("--repeat", type=int, default=5, help="fresh processes per figure (the median is printed)")
    ap.add_argument("--shards", default=None, help="a shard folder to measure instead of building one")
    ap.add_argument("--run-dir", default=None, help="a run folder to score instead of making one")
    ap.add_argument("--trajectories", type=int, default=128, help="trajectories of the run made to score")
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    n = args.repeat
    print(f"tree {tree}; median of {n} fresh processes each")
    print(f"reproduce: {' '.join([Path(sys.executable).name, *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shards = Path(args.shards) if args.shards else build_shards(folder, args.fixture)

        help_s = wall(trajbench("--help"), tree, n)
        import_s = wall([sys.executable, "-c", "import cli"], tree, n)
        start_argv = trajbench("replay", "run", str(shards), "--endpoint", CLOSED, "--out", str(folder / "refused"))
        start_s = wall(start_argv, tree, n, ok=(1,))
        print(f"start-up: trajbench --help (python -m cli) {help_s:.2f} s, python -c 'import cli' {import_s:.2f} s")
        print(f"start-up: trajbench replay run SHARDS --endpoint {CLOSED} (to the refused preflight) {start_s:.2f} s")

        runs = [child(VERIFY, [str(shards)], tree) for _ in range(n)]
        mb = runs[0]["bytes"] / 1e6
        start_ms = 1e3 * statistics.median(r["start_s"] for r in runs)
        slots_ms = 1e3 * statistics.median(r["slots_s"] for r in runs)
        read_start = statistics.median(r["start_read"] for r in runs) / 1e6
        read_slots = statistics.median(r["slots_read"] for r in runs) / 1e6
        print(
            f"shards {shards.name} ({mb:.1f} MB in shard files, {int(runs[0]['turns']):,} turns): "
            f"open + verify + footers {start_ms:.0f} ms, {read_start:.1f} MB read; "
            f"the slots' reads of every instance {slots_ms:.0f} ms, {read_slots:.1f} MB read from files"
        )

        run_dir = Path(args.run_dir) if args.run_dir else make_run(folder, shards, args.trajectories)
        times = []
        for k in range(n):
            copy = Path(shutil.copytree(run_dir, folder / f"score{k}"))
            times.append(child(SCORE, [str(copy)], tree)["s"])
            shutil.rmtree(copy)
        turns = json.loads((run_dir / "run.json").read_text())["planned_turns"]
        print(f"scoring {run_dir.name} ({turns:,} turns): jobs.evaluate_point {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
