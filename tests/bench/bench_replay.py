"""Replay engine figures (prints, asserts nothing): scheduler overhead per turn and end-to-end
turn rate against the zero-latency simulator, in-process and with worker processes.

    .venv/bin/python tests/bench/bench_replay.py [--concurrency 32] [--trajectories 40]

Uses the shared 20 coding trajectories when present (long, growing prompts), else the sample.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import traces
from replay.client.stream import StreamResult
from replay.config import RunConfig
from replay.results.records import read_records
from replay.run import run_replay
from replay.sim import SimConfig, start_simulator

ROOT = Path(__file__).resolve().parents[2]
CODING20 = ROOT.parent / "shared" / "fixtures" / "mlperf_coding_20.jsonl"


class InstantClient:
    """Answers at once: what is left is the scheduler, prompt rebuild, body, records and writes."""

    def __init__(self, plan: object) -> None:
        pass

    async def __aenter__(self) -> InstantClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    async def stream_chat(self, body: bytes, headers: dict, *, timeout_s: float) -> StreamResult:  # type: ignore[type-arg]
        await asyncio.sleep(0)
        t = time.monotonic_ns()
        return StreamResult(
            t, t, t, (t,), "ok", "", (), "stop", {"prompt_tokens": 1, "completion_tokens": 1}, 200, None, None
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--trajectories", type=int, default=40)
    args = ap.parse_args()
    src = CODING20 if CODING20.is_file() else ROOT / "traces" / "data" / "sample.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        shards = Path(tmp) / "shards"
        traces.build_shards([str(src)], shards, traces.BuildOptions(name="bench"))
        print(f"dataset {src.name}, C={args.concurrency}, {args.trajectories} trajectory instances, no delays")

        def cfg(out: str, **kw: Any) -> RunConfig:
            return RunConfig(
                shards=str(shards),
                concurrency=args.concurrency,
                num_trajectories=args.trajectories,
                inject_delays=False,
                out=str(Path(tmp) / out),
                progress="none",
                **kw,
            )

        cpu0, wall0 = time.process_time(), time.perf_counter()
        run_dir = asyncio.run(run_replay(cfg("instant", endpoint="http://unused"), client_factory=InstantClient))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        n = sum(1 for _ in read_records(run_dir))
        print(f"scheduler only (instant client): {n} turns, {1e3 * cpu / n:.3f} ms CPU/turn, {n / wall:.0f} turns/s")

        sim_opts = SimConfig(osl_mean=64, osl_cv=0.0, step_base_ms=0.0, prefill_ms_per_token=0.0, batch_ms_per_seq=0.0)
        with start_simulator(sim_opts) as sim:
            for workers in (1, 2):
                cpu0, wall0 = time.process_time(), time.perf_counter()
                run_dir = asyncio.run(run_replay(cfg(f"sim-w{workers}", endpoint=sim.base_url, workers=workers)))
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                n = sum(1 for _ in read_records(run_dir))
                where = "parent CPU (client + scheduler)" if workers == 1 else "parent CPU (coordinator + writer)"
                conns = json.loads((run_dir / "performance" / "result_summary.json").read_text())["trajbench"][
                    "connections"
                ]
                print(
                    f"simulator, 64-token answers, workers={workers}: {n} turns in {wall:.1f} s = {n / wall:.0f} turns/s; "
                    f"{where} {1e3 * cpu / n:.2f} ms/turn; sockets opened before the first request "
                    f"{conns['prewarmed']}, during the run {conns['opened_in_run']}, reconnects {conns['reconnects']}  "
                    f"[tests/bench/bench_replay.py --concurrency {args.concurrency} --trajectories {args.trajectories}]"
                )


if __name__ == "__main__":
    main()
