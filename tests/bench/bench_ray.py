"""`--backend ray` against `--backend process` on this host (prints figures, asserts nothing).

    .venv/bin/python tests/bench/bench_ray.py [--concurrency 128,512] [--workers 2] [--tokens 32]
        [--tick-ms 10] [--passes 1] [--profile]

Both backends replay the bundled sample (delays off, `--passes` × C instances) against the
calibration server (`replay.calibrate.server`) pacing every stream like an engine. Each chunk's
text is the server's monotonic send stamp, so a record's TTFT error is its first chunk's
arrival − the server's stamp of it (one host, one clock; for Ray the arrival is mapped to the
driver's clock by the measured offset, so the offset's error is part of the figure). Driver CPU
is `time.process_time()` of this process over the whole `run_replay` (coordination, record
writing, the summary; the workers' own CPU is not in it), per finished turn. The Ray cluster is
started here: a head and a second node (`ray start --block`, W CPUs in all), stopped at the end.
Figures are noisy on a shared machine: compare runs made side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import pstats
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import traces
from replay.calibrate.run import _Server
from replay.calibrate.server import STAMP_DIGITS as STAMP
from replay.config import RunConfig
from replay.results.records import read_records
from replay.run import run_replay

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "data" / "sample.jsonl"


def _ray_node(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(Path(sys.executable).with_name("ray")), "start", "--block", "--disable-usage-stats", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_cluster(tmp: Path, cpus: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT))
    head_cpus = cpus - cpus // 2
    procs = [
        _ray_node(
            ["--head", "--port=0", "--include-dashboard=false", f"--num-cpus={head_cpus}", f"--temp-dir={tmp}"],
            tmp / "head.log",
            env,
        )
    ]
    deadline = time.monotonic() + 60
    address = None
    while address is None:
        if time.monotonic() > deadline:
            raise SystemExit((tmp / "head.log").read_text())
        m = re.search(r"ray start --address='([^']+)'", (tmp / "head.log").read_text(errors="replace"))
        address = m.group(1) if m else None
        time.sleep(0.2)
    if cpus // 2:
        procs.append(_ray_node([f"--address={address}", f"--num-cpus={cpus // 2}"], tmp / "node.log", env))
    import ray

    ray.init(address=address, namespace="trajbench", log_to_driver=False, logging_level=logging.WARNING)
    while len([n for n in ray.nodes() if n["Alive"]]) < len(procs):  # type: ignore[no-untyped-call]
        time.sleep(0.2)
    return address, procs


def stop_cluster(procs: list[subprocess.Popen[bytes]]) -> None:
    import ray

    ray.shutdown()
    for proc in reversed(procs):
        proc.terminate()  # `ray start --block` stops its node's processes
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: that node's processes only
            proc.wait(10)


def measure(config: RunConfig, profile: bool = False) -> tuple[float, int, list[int]]:
    prof = cProfile.Profile() if profile else None
    cpu0 = time.process_time()
    if prof is not None:
        prof.enable()
    run_dir = asyncio.run(run_replay(config))
    if prof is not None:
        prof.disable()
    cpu = time.process_time() - cpu0
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    recs = [r for r in read_records(run_dir) if r.ok]
    errs = [r.t_first_ns - int(r.content[:STAMP]) for r in recs if r.t_first_ns is not None]
    return cpu, len(recs), errs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", default="128,512")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=32, help="mean chunks per turn")
    ap.add_argument("--tick-ms", type=float, default=10.0, help="server tick: one chunk per stream per tick")
    ap.add_argument("--passes", type=int, default=1, help="instances per slot")
    ap.add_argument("--profile", action="store_true", help="cProfile the driver of the Ray runs (own time)")
    args = ap.parse_args()
    print(
        f"tests/bench/bench_ray.py --concurrency {args.concurrency} --workers {args.workers} --tokens {args.tokens} "
        f"--tick-ms {args.tick_ms:g} --passes {args.passes}"
    )
    with tempfile.TemporaryDirectory(prefix="tbray") as tmpname:
        tmp = Path(tmpname)
        shards = tmp / "shards"
        traces.build_shards([str(SAMPLE)], shards, traces.BuildOptions(name="sample"))
        (tmp / "ray").mkdir()
        address, procs = start_cluster(tmp / "ray", args.workers)
        try:
            with _Server(args.tokens, args.tick_ms / 1000) as srv:
                for c in (int(x) for x in args.concurrency.split(",")):
                    for backend in ("process", "ray"):
                        config = RunConfig(
                            shards=str(shards),
                            endpoint=srv.url,
                            concurrency=c,
                            workers=args.workers,
                            num_trajectories=c * args.passes,
                            inject_delays=False,
                            skip_preflight=True,
                            progress="none",
                            out=str(tmp / f"{backend}-c{c}"),
                            backend=backend,
                            ray_address=address,
                        )
                        cpu, turns, errs = measure(config, args.profile and backend == "ray")
                        p50, p99 = (np.percentile(errs, [50, 99]) / 1e6) if errs else (float("nan"),) * 2
                        print(
                            f"C={c:4d} {backend:7s} W={args.workers} turns={turns:5d} driver CPU/turn "
                            f"{1000 * cpu / max(turns, 1):.3f} ms  TTFT error p50 {p50:.2f} ms p99 {p99:.2f} ms"
                        )
        finally:
            stop_cluster(procs)


if __name__ == "__main__":
    main()
