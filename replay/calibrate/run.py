"""`replay calibrate`: measure the harness's own limits against a loopback calibration server.

Two phases, each against a fresh `replay.calibrate.server` process (never the client's event loop):
1. saturated — the server streams as fast as it can; we report streamed chunks/s and turns/s,
   per worker and per client CPU-second (`time.process_time()` of the client processes only);
2. paced — the server streams like an engine (`Paced`: a first chunk after 50 ms, then one every
   5 ms, 64 a turn), so every chunk arrives in its own socket read; we report the client's CPU
   per turn and its timing error = client arrival − server send stamp (same host monotonic
   clock) for TTFT (first chunk) and ITL (gap vs the server's gap), p50/p99.
Comparison clients (`COMPARE`) run the same phases against the same server settings.

By default (`pin`) the paced phase runs the server on one CPU and the clients on the others, so
the timing error is the client's own, not the two fighting over a core; the saturated phase
leaves them free to share the cores (its figure is CPU, not timing). Client processes are spawned with
`multiprocessing` and released together by a barrier. Each phase runs as many server processes
as client workers (one shared port), so the server is less often the bottleneck. The
server spreads answer lengths so streams do not run in lockstep (see `replay.calibrate.server`).
Each slot's first turn is left out of the timing error: it overlaps the burst of connection
setups at the start and says nothing about steady state.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from ..client import FastTransport, StreamClient, event_loop, frozen_heap, run_loop
from ..errors import ReplayError

_ABENCH_DRIVER = Path(__file__).with_name("abench_driver.py")
_BODY_BASE = {
    "model": "cal",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


@dataclass(frozen=True)
class CalRow:
    """One client run against one server: raw totals and the derived figures."""

    phase: str
    client: str
    workers: int
    concurrency: int
    turns: int
    failed: int
    chunks: int
    wall_s: float
    cpu_s: float
    ttft_err_p50_ms: float | None
    ttft_err_p99_ms: float | None
    itl_err_p50_ms: float | None
    itl_err_p99_ms: float | None

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.wall_s if self.wall_s else 0.0

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.wall_s if self.wall_s else 0.0

    @property
    def chunks_per_cpu_s(self) -> float:
        return self.chunks / self.cpu_s if self.cpu_s else 0.0

    @property
    def cpu_per_turn_ms(self) -> float:
        return 1000 * self.cpu_s / self.turns if self.turns else 0.0

    @property
    def cores_used(self) -> float:
        """Client CPU-seconds per wall second: 0.5 = half a core."""
        return self.cpu_s / self.wall_s if self.wall_s else 0.0


# ---- one run of our client, in a spawned process
async def _drive_ours(url: str, slots: int, turns: int, tokens: int, transport: str) -> dict[str, Any]:
    body = dict(_BODY_BASE, max_completion_tokens=tokens)
    tr = (
        FastTransport(slots)
        if transport == "fast"
        else httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=slots))
    )
    left = [turns]
    results = []
    failed = [0]
    async with StreamClient(url, max_connections=slots, api_key=None, transport=tr) as client:

        async def slot() -> None:
            while left[0] > 0:
                left[0] -= 1
                r = await client.stream_chat(body, {"X-Session-ID": "cal"}, timeout_s=120)
                if r.ok:
                    results.append((r.chunk_ns, r.content))
                else:
                    failed[0] += 1

        cpu0, wall0 = time.process_time(), time.monotonic_ns()
        await client.prewarm(slots)  # as a run does (counted in the client's CPU)
        with frozen_heap():  # as a run's scheduler does
            await asyncio.gather(*(slot() for _ in range(slots)))
        cpu1, wall1 = time.process_time(), time.monotonic_ns()
    return {
        "cpu_s": cpu1 - cpu0,
        "t_start_ns": wall0,
        "t_end_ns": wall1,
        "failed": failed[0],
        "turns": [[list(ns), text] for ns, text in results],
    }


def _worker_entry(
    barrier: Any,
    queue: Any,
    url: str,
    slots: int,
    turns: int,
    tokens: int,
    transport: str,
    loop: str,
    cores: frozenset[int] | None,
) -> None:
    if cores:
        os.sched_setaffinity(0, cores)
    barrier.wait()
    # a process entry point: like cli.py, the one place this process starts an event loop
    queue.put(run_loop(_drive_ours(url, slots, turns, tokens, transport), loop))


def _run_ours(
    url: str,
    workers: int,
    concurrency: int,
    turns: int,
    tokens: int,
    transport: str,
    loop: str,
    cores: frozenset[int] | None = None,
) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    procs = [
        ctx.Process(
            target=_worker_entry,
            daemon=True,
            args=(
                barrier,
                queue,
                url,
                _share(concurrency, workers, w),
                _share(turns, workers, w),
                tokens,
                transport,
                loop,
                cores,
            ),
        )
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        return [_next_result(queue, procs) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()


def _next_result(queue: Queue[dict[str, Any]], procs: Sequence[BaseProcess]) -> dict[str, Any]:
    """The next worker's facts; fail fast when a worker died instead of waiting out a timeout."""
    import queue as queue_mod

    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        try:
            return queue.get(timeout=0.5)
        except queue_mod.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise ReplayError(
                    f"a calibration worker exited with code {dead[0].exitcode}; see its traceback above "
                    '(a script calling calibrate() needs an `if __name__ == "__main__":` guard)'
                ) from None
    raise ReplayError("calibration workers gave no result within 900 s; lower --turns")


def _share(total: int, parts: int, k: int) -> int:
    return total // parts + (1 if k < total % parts else 0)


def _run_abench(
    python: str, url: str, concurrency: int, turns: int, tokens: int, cores: frozenset[int] | None = None
) -> list[dict[str, Any]]:
    cmd = [
        python,
        str(_ABENCH_DRIVER),
        url + "/v1/chat/completions",
        "--concurrency",
        str(concurrency),
        "--turns",
        str(turns),
        "--tokens",
        str(tokens),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, preexec_fn=_pinned(cores))
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise ReplayError(
            f"agentic-bench driver failed under {python}: {tail[0]}; install it with "
            f"`{python} -m pip install agentic-bench` or pass --compare-python"
        )
    return [json.loads(done.stdout)]


def _pinned(cores: frozenset[int] | None) -> Callable[[], None] | None:
    """A child process's first act (before exec): run only on `cores`."""
    if not cores:
        return None
    return lambda: os.sched_setaffinity(0, cores)


#: Clients calibration can compare: name -> runner(url, workers, concurrency, turns, tokens, python, cores).
COMPARE: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "none": lambda *a: [],
    "agentic-bench": lambda url, w, c, n, k, py, cores: _run_abench(py, url, c, n, k, cores),
    "httpx-default": lambda url, w, c, n, k, py, cores: _run_ours(url, 1, c, n, k, "httpx", "asyncio", cores),
    "trajbench-asyncio": lambda url, w, c, n, k, py, cores: _run_ours(url, 1, c, n, k, "fast", "asyncio", cores),
    "trajbench-uvloop": lambda url, w, c, n, k, py, cores: _run_ours(url, 1, c, n, k, "fast", "uvloop", cores),
}


# ---- the server process
class _Server:
    """`procs` calibration server processes sharing one port, killed on exit."""

    def __init__(
        self, tokens: int, interval_s: float, procs: int = 1, ttft_s: float = 0.0, cores: frozenset[int] | None = None
    ) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        port = 0
        try:
            for _ in range(procs):
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "replay.calibrate.server",
                        "--tokens",
                        str(tokens),
                        "--interval-ms",
                        repr(interval_s * 1000),
                        "--ttft-ms",
                        repr(ttft_s * 1000),
                        "--port",
                        str(port),
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                    preexec_fn=_pinned(cores),
                    cwd=Path(__file__).resolve().parents[2],
                )
                self.procs.append(proc)
                line = proc.stdout.readline() if proc.stdout else ""
                if not line.startswith("PORT "):
                    raise ReplayError(
                        "the calibration server did not start (python -m replay.calibrate.server); is trajbench installed?"
                    )
                port = int(line.split()[1])
        except BaseException:
            self.__exit__()
            raise
        self.url = f"http://127.0.0.1:{port}"

    def __enter__(self) -> _Server:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()


# ---- turning raw facts into rows
def _row(phase: str, client: str, workers: int, concurrency: int, runs: list[dict[str, Any]]) -> CalRow:
    ttft: list[int] = []
    itl: list[int] = []
    chunks = turns = 0
    for run in runs:
        warm_up = concurrency // len(runs)  # each slot's first turn overlaps the connection-setup burst
        for k, (arrivals, text) in enumerate(run["turns"]):
            stamps = [int(s) for s in text.split()]
            n = min(len(stamps), len(arrivals))
            if not n:
                continue
            turns += 1
            chunks += len(arrivals)
            if k < warm_up:
                continue
            ttft.append(arrivals[0] - stamps[0])
            itl.extend(abs((arrivals[i] - arrivals[i - 1]) - (stamps[i] - stamps[i - 1])) for i in range(1, n))
    wall = (max(r["t_end_ns"] for r in runs) - min(r["t_start_ns"] for r in runs)) / 1e9
    return CalRow(
        phase,
        client,
        workers,
        concurrency,
        turns,
        sum(r["failed"] for r in runs),
        chunks,
        wall,
        sum(r["cpu_s"] for r in runs),
        *_p50_p99(ttft),
        *_p50_p99(itl),
    )


def _p50_p99(values_ns: list[int]) -> tuple[float | None, float | None]:
    if not values_ns:
        return None, None
    a = np.asarray(values_ns, dtype=np.int64)
    p50, p99 = np.percentile(a, [50, 99], method="lower")
    return float(p50) / 1e6, float(p99) / 1e6


@dataclass(frozen=True)
class Paced:
    """The paced phase's server: like an engine, a first chunk after `ttft_ms`, then one chunk
    every `itl_ms` (all streams in one batched tick), `tokens` chunks a turn on average."""

    ttft_ms: float = 50.0
    itl_ms: float = 5.0
    tokens: int = 64

    def __post_init__(self) -> None:
        if self.ttft_ms < 0 or self.itl_ms < 0 or self.tokens < 1:
            raise ReplayError(
                f"--paced {self.ttft_ms:g},{self.itl_ms:g},{self.tokens}: times must be >= 0, tokens >= 1"
            )


def pin_layout(pin: bool) -> tuple[frozenset[int] | None, frozenset[int] | None]:
    """(server CPUs, client CPUs): the server on the first CPU this process may use, the clients
    on the others, so neither steals the other's core; (None, None) unpinned or on one CPU."""
    if not pin or not hasattr(os, "sched_getaffinity"):
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return frozenset(cpus[:1]), frozenset(cpus[1:])


def calibrate(
    *,
    concurrency: int = 128,
    workers: int = 1,
    turns: int = 2048,
    tokens: int = 256,
    paced: Paced = Paced(),
    pin: bool = True,
    compare: tuple[str, ...] = (),
    compare_python: str | None = None,
    loop: str | None = None,
    echo: Callable[[str], None] = lambda s: None,
) -> list[CalRow]:
    """Run both phases (saturated, paced) for our client (1..workers processes) and each comparison client."""
    if concurrency < workers:
        raise ReplayError(f"--concurrency {concurrency} is below --workers {workers}; every worker needs a slot")
    unknown = [c for c in compare if c not in COMPARE]
    if unknown:
        raise ReplayError(f"unknown --compare {unknown[0]!r}; choose from {', '.join(sorted(COMPARE))}")
    py = compare_python or sys.executable
    loop = event_loop(loop)  # by default the one a replay runs on
    if "trajbench-uvloop" in compare:
        event_loop("uvloop")  # installed?
    server_cpus, client_cpus = pin_layout(pin)
    ours = f"trajbench-{loop}"
    others = [name for name in compare if name != "none"]
    rows: list[CalRow] = []
    paced_turns = max(2 * concurrency, turns // 2)
    phases = (  # (phase, turns, chunks a turn, tick, TTFT, server CPUs, client CPUs)
        ("saturated", turns, tokens, 0.0, 0.0, None, None),
        ("paced", paced_turns, paced.tokens, paced.itl_ms / 1000, paced.ttft_ms / 1000, server_cpus, client_cpus),
    )
    for phase, n, k, interval_s, ttft_s, on_server, on_clients in phases:
        with _Server(k, interval_s, procs=workers, ttft_s=ttft_s, cores=on_server) as srv:
            for w in range(1, workers + 1):
                echo(f"{phase}: {ours}, {w} worker(s), C={concurrency}")
                runs = _run_ours(srv.url, w, concurrency, n, k, "fast", loop, on_clients)
                rows.append(_row(phase, ours, w, concurrency, runs))
            for name in others:
                echo(f"{phase}: {name}, C={concurrency}")
                runs = COMPARE[name](srv.url, 1, concurrency, n, k, py, on_clients)
                rows.append(_row(phase, name, 1, concurrency, runs))
    return rows


def format_rows(rows: list[CalRow]) -> list[str]:
    """A fixed-width table, one line per run, for the terminal."""
    head = (
        f"{'phase':<10} {'client':<14} {'W':>2} {'C':>4} {'turns':>6} {'fail':>4} {'chunks/s':>10} {'turns/s':>8} "
        f"{'chunks/CPU-s':>12} {'CPU/turn ms':>11} {'cores':>5} {'TTFT err p50/p99 ms':>20} {'ITL err p50/p99 ms':>19}"
    )
    out = [head]
    for r in rows:
        ttft = "-" if r.ttft_err_p50_ms is None else f"{r.ttft_err_p50_ms:.3f}/{r.ttft_err_p99_ms:.3f}"
        itl = "-" if r.itl_err_p50_ms is None else f"{r.itl_err_p50_ms:.3f}/{r.itl_err_p99_ms:.3f}"
        out.append(
            f"{r.phase:<10} {r.client:<14} {r.workers:>2} {r.concurrency:>4} {r.turns:>6} {r.failed:>4} "
            f"{r.chunks_per_s:>10.0f} {r.turns_per_s:>8.1f} {r.chunks_per_cpu_s:>12.0f} {r.cpu_per_turn_ms:>11.2f} "
            f"{r.cores_used:>5.2f} {ttft:>20} {itl:>19}"
        )
    out.append(
        f"(cores available: {os.cpu_count()}; CPU is the client processes' only; error = arrival − server send stamp)"
    )
    return out


def layout_line(pin: bool, paced: Paced) -> str:
    """What the two phases were, for the terminal: pacing and where each process ran."""
    server, clients = pin_layout(pin)
    where = (
        f"paced server pinned to CPU {','.join(map(str, sorted(server)))}, "
        f"clients to CPU {','.join(map(str, sorted(clients)))}"
        if server and clients
        else "unpinned"
    )
    return (
        f"(saturated: zero latency; paced: first chunk after {paced.ttft_ms:g} ms, then one every "
        f"{paced.itl_ms:g} ms, {paced.tokens} chunks a turn; {where})"
    )


def rows_to_json(rows: list[CalRow]) -> str:
    return json.dumps(
        [
            dict(
                asdict(r),
                chunks_per_s=r.chunks_per_s,
                turns_per_s=r.turns_per_s,
                chunks_per_cpu_s=r.chunks_per_cpu_s,
                cpu_per_turn_ms=r.cpu_per_turn_ms,
                cores_used=r.cores_used,
            )
            for r in rows
        ],
        indent=2,
    )
