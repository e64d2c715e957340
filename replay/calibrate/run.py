"""`replay calibrate`: measure the harness's own limits against a loopback calibration server.

Two phases, each against a fresh `replay.calibrate.server` process (never the client's event loop):
1. saturated — the server streams as fast as it can; we report streamed chunks/s and turns/s,
   per worker and per client CPU-second (`time.process_time()` of the client processes only);
2. paced — the server streams like an engine (`Paced`: a first chunk after 50 ms, then one every
   5 ms, 64 a turn), so every chunk arrives in its own socket read; we report the client's CPU
   per turn and its timing error = client arrival − server send stamp (same host monotonic
   clock) for TTFT (first chunk) and ITL (gap vs the server's gap), p50/p99.
Comparison clients (`COMPARE`) run the same phases against the same server settings; `floor`
(`replay.calibrate.floor`) is a bare client on the same loop that sends the same bodies and only
stamps its reads, so ours minus it is what the harness itself costs.

By default (`pin`) the paced phase runs the server on one CPU and the clients on the others, so
the timing error is the client's own, not the two fighting over a core; the saturated phase
leaves them free to share the cores (its figure is CPU, not timing). Client processes are spawned with
`multiprocessing` and released together by a barrier. Each phase runs as many server processes
as client workers (one shared port), so the server is less often the bottleneck. The
server spreads answer lengths so streams do not run in lockstep (see `replay.calibrate.server`).
Every turn enters the timing error; each slot's first turn (the first wave, every slot sending at
once) is also reported on its own. With `--shards` the workload is the dataset's own
(`replay.calibrate.workload`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
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
from .workload import CpuSampler, pinned, run_trajbench, scratch, write_sessions

_ABENCH_DRIVER = Path(__file__).with_name("abench_driver.py")
#: the fixed workload's request (its `max_completion_tokens` added per phase)
FIXED_BODY = {
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
    first_ttft_err_p99_ms: float | None = None  # each slot's first turn only (the first wave)
    process_cpu_s: float | None = None  # the whole client process: start-up to exit (--shards)
    server_cores: float | None = None  # the calibration server's CPU-seconds per wall second

    @property
    def process_cpu_per_turn_ms(self) -> float | None:
        """The whole process's CPU per turn, as a user pays for it (start-up, verification, scoring)."""
        return None if self.process_cpu_s is None or not self.turns else 1000 * self.process_cpu_s / self.turns

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
    body = dict(FIXED_BODY, max_completion_tokens=tokens)
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
            first = True
            while left[0] > 0:
                left[0] -= 1
                r = await client.stream_chat(body, {"X-Session-ID": "cal"}, timeout_s=120)
                if r.ok:
                    results.append((r.chunk_ns, r.content, first))
                else:
                    failed[0] += 1
                first = False

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
        "turns": [[list(ns), text, first] for ns, text, first in results],
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
    python: str, url: str, concurrency: int, work: Workload, cores: frozenset[int] | None
) -> list[dict[str, Any]]:
    cmd = [python, str(_ABENCH_DRIVER), url + "/v1/chat/completions", "--concurrency", str(concurrency)]
    cmd += work.driver_args()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, preexec_fn=pinned(cores))
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise ReplayError(
            f"agentic-bench driver failed under {python}: {tail[0]}; install it with "
            f"`{python} -m pip install agentic-bench` or pass --compare-python"
        )
    return [json.loads(done.stdout)]


def _run_floor(url: str, concurrency: int, work: Workload, cores: frozenset[int] | None) -> list[dict[str, Any]]:
    """`replay.calibrate.floor` in its own process, on the client CPUs and our client's loop,
    sending what ours sends."""
    cmd = [sys.executable, "-m", "replay.calibrate.floor", url, "--concurrency", str(concurrency), "--loop", work.loop]
    cmd += work.driver_args()
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=1800,
            preexec_fn=pinned(cores),
            cwd=Path(__file__).resolve().parents[2],
        )
        if done.returncode == 0:
            return [json.loads(done.stdout)]
        why = (done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}, no output"])[0]
    except subprocess.TimeoutExpired:
        why = "no result within 1800 s (lower --turns or --trajectories)"
    except json.JSONDecodeError:
        why = "it printed no JSON result"
    raise ReplayError(
        f"the floor client (python -m replay.calibrate.floor) failed: {why}; rerun without --compare floor"
    )


@dataclass(frozen=True)
class Workload:
    """What one phase's clients send: `turns` two-word prompts (`tokens` chunks a turn), or with
    `shards` the dataset's own instances (`trajectories` of them, through `trajbench replay run`;
    agentic-bench and the floor from `sessions`), their run folders under `scratch`."""

    turns: int
    tokens: int
    shards: Path | None = None
    trajectories: int = 0
    sessions: Path | None = None
    scratch: Path | None = None
    loop: str = "uvloop"  # our client's event loop (the floor runs on it too)

    def driver_args(self) -> list[str]:
        """The workload's options for a standalone client (the agentic-bench driver, the floor)."""
        if self.sessions is not None:
            return ["--sessions", str(self.sessions), "--instances", str(self.trajectories)]
        return ["--turns", str(self.turns), "--tokens", str(self.tokens)]

    def ours(
        self, url: str, workers: int, concurrency: int, loop: str, cores: frozenset[int] | None, phase: str
    ) -> list[dict[str, Any]]:
        if self.shards is None:
            return _run_ours(url, workers, concurrency, self.turns, self.tokens, "fast", loop, cores)
        assert self.scratch is not None
        out = self.scratch / f"{phase}-{loop}-w{workers}"
        return [
            run_trajbench(
                self.shards,
                url,
                concurrency=concurrency,
                trajectories=self.trajectories,
                workers=workers,
                loop=loop,
                cores=cores,
                out=out,
            )
        ]


#: Clients calibration can compare: name -> runner(url, concurrency, workload, python, cores, phase).
COMPARE: dict[str, Callable[[str, int, Workload, str, frozenset[int] | None, str], list[dict[str, Any]]]] = {
    "none": lambda *a: [],
    "agentic-bench": lambda url, c, work, py, cores, phase: _run_abench(py, url, c, work, cores),
    "floor": lambda url, c, work, py, cores, phase: _run_floor(url, c, work, cores),
    "httpx-default": lambda url, c, work, py, cores, phase: _run_ours(
        url, 1, c, work.turns, work.tokens, "httpx", "asyncio", cores
    ),
    "trajbench-asyncio": lambda url, c, work, py, cores, phase: work.ours(url, 1, c, "asyncio", cores, phase),
    "trajbench-uvloop": lambda url, c, work, py, cores, phase: work.ours(url, 1, c, "uvloop", cores, phase),
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
                    preexec_fn=pinned(cores),
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
def _row(
    phase: str, client: str, workers: int, concurrency: int, runs: list[dict[str, Any]], server_cores: float | None
) -> CalRow:
    ttft: list[int] = []
    first_ttft: list[int] = []
    itl: list[int] = []
    chunks = turns = 0
    for run in runs:
        for arrivals, text, first in run["turns"]:
            stamps = [int(s) for s in text.split()]
            n = min(len(stamps), len(arrivals))
            if not n:
                continue
            turns += 1
            chunks += len(arrivals)
            ttft.append(arrivals[0] - stamps[0])
            if first:
                first_ttft.append(arrivals[0] - stamps[0])
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
        first_ttft_err_p99_ms=_p50_p99(first_ttft)[1],
        process_cpu_s=sum(r["process_cpu_s"] for r in runs) if all("process_cpu_s" in r for r in runs) else None,
        server_cores=server_cores,
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
    shards: str | Path | None = None,
    trajectories: int | None = None,
    phases: tuple[str, ...] = ("saturated", "paced"),
    echo: Callable[[str], None] = lambda s: None,
) -> list[CalRow]:
    """Run the phases (saturated, paced) for our client (1..workers processes) and each comparison
    client; with `shards`, on the dataset's own prompts (`trajectories` instances, by default two
    per slot) through `trajbench replay run` (`replay.calibrate.workload`)."""
    if concurrency < workers:
        raise ReplayError(f"--concurrency {concurrency} is below --workers {workers}; every worker needs a slot")
    unknown = [c for c in compare if c not in COMPARE]
    if unknown:
        raise ReplayError(f"unknown --compare {unknown[0]!r}; choose from {', '.join(sorted(COMPARE))}")
    if shards is not None and "httpx-default" in compare:
        raise ReplayError("--compare httpx-default runs the fixed workload only; drop it or --shards")
    if shards is None and trajectories is not None:
        raise ReplayError("--trajectories counts the instances of --shards; give --shards or drop it")
    if shards is not None:
        import traces

        traces.Shards(shards)  # not a shard folder: said now, before any server starts
    py = compare_python or sys.executable
    loop = event_loop(loop)  # by default the one a replay runs on
    if "trajbench-uvloop" in compare:
        event_loop("uvloop")  # installed?
    server_cpus, client_cpus = pin_layout(pin)
    ours = f"trajbench-{loop}"
    others = [name for name in compare if name != "none"]
    rows: list[CalRow] = []
    plan = {  # phase: (turns, chunks a turn, tick, TTFT, server CPUs, client CPUs)
        "saturated": (turns, tokens, 0.0, 0.0, None, None),
        "paced": (
            max(2 * concurrency, turns // 2),
            paced.tokens,
            paced.itl_ms / 1000,
            paced.ttft_ms / 1000,
            server_cpus,
            client_cpus,
        ),
    }
    with scratch() as tmp:
        sessions = None
        if shards is not None and {"agentic-bench", "floor"} & set(others):
            sessions = write_sessions(Path(shards), Path(tmp))
        for phase in phases:
            n, k, interval_s, ttft_s, on_server, on_clients = plan[phase]
            work = Workload(
                n,
                k,
                Path(shards) if shards is not None else None,
                trajectories or 2 * concurrency,
                sessions,
                Path(tmp),
                loop,
            )
            with _Server(k, interval_s, procs=workers, ttft_s=ttft_s, cores=on_server) as srv:
                runners: list[tuple[str, int, Callable[[], list[dict[str, Any]]]]] = [
                    (ours, w, functools.partial(work.ours, srv.url, w, concurrency, loop, on_clients, phase))
                    for w in range(1, workers + 1)
                ]
                runners += [
                    (name, 1, functools.partial(COMPARE[name], srv.url, concurrency, work, py, on_clients, phase))
                    for name in others
                ]
                for name, w, run in runners:
                    echo(f"{phase}: {name}, {w} worker(s), C={concurrency}")
                    with contextlib.ExitStack() as stack:
                        samplers = [stack.enter_context(CpuSampler(p.pid)) for p in srv.procs]
                        runs = run()
                    # over the client's own window (its streaming phase), as its `cores` is
                    t0, t1 = min(r["t_start_ns"] for r in runs), max(r["t_end_ns"] for r in runs)
                    server = sum(s.cpu_at(t1) - s.cpu_at(t0) for s in samplers) / max((t1 - t0) / 1e9, 1e-9)
                    rows.append(_row(phase, name, w, concurrency, runs, server))
    return rows


def format_rows(rows: list[CalRow]) -> list[str]:
    """A fixed-width table, one line per run, for the terminal."""
    head = (
        f"{'phase':<10} {'client':<17} {'W':>2} {'C':>4} {'turns':>6} {'fail':>4} {'chunks/s':>9} "
        f"{'CPU/turn ms':>11} {'whole ms':>8} {'cores':>5} {'server':>6} "
        f"{'TTFT err p50/p99 ms':>19} {'1st p99':>7} {'ITL err p50/p99 ms':>18}"
    )
    out = [head]
    for r in rows:
        ttft = "-" if r.ttft_err_p50_ms is None else f"{r.ttft_err_p50_ms:.2f}/{r.ttft_err_p99_ms:.2f}"
        first = "-" if r.first_ttft_err_p99_ms is None else f"{r.first_ttft_err_p99_ms:.2f}"
        itl = "-" if r.itl_err_p50_ms is None else f"{r.itl_err_p50_ms:.2f}/{r.itl_err_p99_ms:.2f}"
        whole = "-" if r.process_cpu_per_turn_ms is None else f"{r.process_cpu_per_turn_ms:.2f}"
        server = "-" if r.server_cores is None else f"{r.server_cores:.2f}"
        out.append(
            f"{r.phase:<10} {r.client:<17} {r.workers:>2} {r.concurrency:>4} {r.turns:>6} {r.failed:>4} "
            f"{r.chunks_per_s:>9.0f} {r.cpu_per_turn_ms:>11.2f} {whole:>8} {r.cores_used:>5.2f} {server:>6} "
            f"{ttft:>19} {first:>7} {itl:>18}"
        )
    out.append(
        f"(cores available: {os.cpu_count()}; CPU/turn: the client's streaming phase, whole: its process from "
        "start to exit; cores: client CPU-s per wall s; server: the calibration server's; error = arrival − "
        "server send stamp, 1st: each slot's first turn)"
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
                process_cpu_per_turn_ms=r.process_cpu_per_turn_ms,
                cores_used=r.cores_used,
            )
            for r in rows
        ],
        indent=2,
    )
