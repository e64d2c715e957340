"""`--workers W`: a run's slots spread over W worker processes, one event loop and client each.

The parent keeps the one `Coordinator` (FIFO, window) and the record file. Parent and workers
speak only the coordinator's message dataclasses over one pipe per worker, so a backend placing
workers on other machines (Ray actors, sockets) carries the same messages: `WorkerReady`/`Start` to begin together, `NextInstance`/`Assign` for work, `TurnDone`
for records, `WindowClosed`/`Stop` for control, `SlotStatus`/`WorkerExit` for the display and the
end.

Records travel to the parent, which is their only writer: the coordinator stamps `in_window`
exactly (it alone knows the close moment; a worker may not have heard of the close yet when its
turn finishes), and one writer never interleaves lines, even records larger than a pipe's atomic
write size. The cost is one pickle per turn over a local pipe, small next to the turn.

Every process reads the same system-wide `time.monotonic_ns()` clock (CLOCK_MONOTONIC on Linux),
so send times from different workers compare directly with the close time. A remote backend
(`replay.loop.raybackend`) runs the same `run_worker` over another transport and maps each machine's
clock with a measured offset.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from ..client import Connections, current_loop, run_loop, watch_pipe
from ..errors import ReplayError
from ..results import Record
from .backend import Sink, WorkerFleet, connections_of, load_counter, open_client, prewarm
from .coordinator import (
    Assign,
    Coordinator,
    NextInstance,
    SlotStatus,
    Start,
    Stop,
    TurnDone,
    WindowClosed,
    WorkerExit,
    WorkerReady,
)
from .scheduler import Scheduler, WorkerPlan


class ProcessBackend(WorkerFleet):
    """W worker processes, one pipe each; the parent's event loop serves the coordinator."""

    def __init__(self, plans: list[WorkerPlan], coordinator: Coordinator, sink: Sink) -> None:
        self.plans = plans
        self.worker_ids = [p.worker for p in plans]
        self.coordinator = coordinator
        self.sink = sink
        self._conns: dict[int, Connection] = {}
        self._procs: dict[int, Any] = {}
        self._status: dict[int, tuple[int, int]] = {}
        self._errors: list[str] = []
        self._done: asyncio.Future[None] | None = None
        self._announced = False
        self._ready: set[int] = set()
        self._connections: dict[int, Connections | None] = {}

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        ctx = mp.get_context("spawn")  # fork would copy the parent's event loop and threads
        for plan in self.plans:
            parent_end, child_end = ctx.Pipe(duplex=True)
            proc = ctx.Process(
                target=worker_main,
                args=(plan, child_end, current_loop()),  # the workers run on the parent's kind of loop
                name=f"trajbench-worker-{plan.worker}",
                daemon=True,
            )
            proc.start()
            child_end.close()
            self._conns[plan.worker] = parent_end
            self._procs[plan.worker] = proc
            watch_pipe(loop, parent_end, self._on_readable, plan.worker)
        try:
            await self._done
        finally:
            for w in list(self._conns):
                self._close(w)
            for proc in self._procs.values():
                await loop.run_in_executor(None, proc.join, 5.0)
                if proc.is_alive():
                    proc.kill()
        if self._errors:
            raise ReplayError("worker failed: " + "; ".join(self._errors))

    def _on_readable(self, worker: int) -> None:
        conn = self._conns.get(worker)
        if conn is None:
            return
        try:
            while worker in self._conns and conn.poll():
                self._handle(worker, conn.recv())
        except (EOFError, OSError):
            self._fail(worker, "exited without saying goodbye (crashed or killed)")

    def _handle(self, worker: int, msg: object) -> None:
        if isinstance(msg, TurnDone):
            self.sink(self.coordinator.stamp(msg.record))
        elif isinstance(msg, NextInstance):
            ordinal = self.coordinator.next_instance(msg.finished, msg.t_ns)  # one host: one monotonic clock
            self._send(worker, Assign(msg.request_id, ordinal))
            if self.coordinator.window_close_ns is not None and not self._announced:
                self._announced = True  # the window closes for every worker at this one moment
                self._broadcast(WindowClosed(self.coordinator.window_close_ns, self.coordinator.stopped))
        elif isinstance(msg, SlotStatus):
            self._status[worker] = (msg.active, msg.waiting)
        elif isinstance(msg, WorkerReady):
            self._ready.add(worker)
            if len(self._ready) == len(self.plans):
                self._broadcast(Start())
        elif isinstance(msg, WorkerExit):
            self._connections[worker] = msg.connections
            if msg.error:
                self._fail(worker, msg.error)
            else:
                self._close(worker)

    def _fail(self, worker: int, error: str) -> None:
        """A broken worker ends the run: the others cancel (their in-flight turns are recorded)
        rather than wait for a start or a FIFO share that will never come."""
        self._errors.append(f"worker {worker}: {error}")
        self._close(worker)
        self.stop(cancel=True)

    def _send(self, worker: int, msg: object) -> None:
        conn = self._conns.get(worker)
        if conn is not None:
            try:
                conn.send(msg)
            except OSError:
                pass  # that worker is gone; its reader reports it

    def _broadcast(self, msg: object) -> None:
        for w in list(self._conns):
            self._send(w, msg)

    def _close(self, worker: int) -> None:
        conn = self._conns.pop(worker, None)
        self._status.pop(worker, None)
        if conn is not None:
            asyncio.get_running_loop().remove_reader(conn.fileno())
            conn.close()
        if not self._conns and self._done is not None and not self._done.done():
            self._done.set_result(None)


class RemoteSource:
    """The scheduler's view of a coordinator at the other end of a transport (inside a worker).

    Transport-agnostic: `send` carries a message to the coordinator (a pipe here, a Ray actor's
    outbox in `replay.loop.raybackend`), and the transport hands every message coming back to `handle`."""

    def __init__(self, worker: int, send: Callable[[object], None]) -> None:
        self.worker = worker
        self._send = send
        self.stop_event = asyncio.Event()
        self.started = asyncio.Event()
        self.scheduler: Scheduler | None = None
        self._pending: dict[int, asyncio.Future[int | None]] = {}
        self._next_id = 0

    async def next_instance(self, slot: int, finished: bool, t_done_ns: int | None = None) -> int | None:
        self._next_id += 1
        fut: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = fut
        t_ns = t_done_ns if t_done_ns is not None else time.monotonic_ns()
        self.send(NextInstance(self.worker, slot, finished, self._next_id, t_ns))
        return await fut

    def emit(self, record: Record) -> None:
        self.send(TurnDone(record))

    def send(self, msg: object) -> None:
        try:
            self._send(msg)
        except OSError:
            self.lost()

    def handle(self, msg: object) -> None:
        if isinstance(msg, Assign):
            fut = self._pending.pop(msg.request_id, None)
            if fut is not None and not fut.done():
                fut.set_result(msg.ordinal)
        elif isinstance(msg, WindowClosed):
            if msg.stop:
                self.stop_event.set()
        elif isinstance(msg, Start):
            self.started.set()
        elif isinstance(msg, Stop):
            self.stop_event.set()
            self.started.set()  # a Ctrl-C before the start: let the worker run out at once
            if msg.cancel and self.scheduler is not None:
                self.scheduler.cancel()

    def lost(self) -> None:
        """The coordinator is gone (parent killed): stop at once; nothing can be recorded now."""
        self.stop_event.set()
        self.started.set()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_result(None)
        self._pending.clear()
        if self.scheduler is not None:
            self.scheduler.cancel()


class PipeSource(RemoteSource):
    """A `RemoteSource` over one end of a `multiprocessing` pipe."""

    def __init__(self, worker: int, conn: Connection) -> None:
        super().__init__(worker, conn.send)
        self.conn = conn

    def on_readable(self) -> None:
        try:
            while self.conn.poll():
                self.handle(self.conn.recv())
        except (EOFError, OSError):
            self.lost()


def worker_main(plan: WorkerPlan, conn: Connection, loop: str | None = None) -> None:
    """Entry point of a worker process: its own event loop, client and slots."""
    # Ctrl-C reaches the whole process group; only the parent decides how to stop (drain, then
    # cancel), and tells the workers over the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    error: str | None = None
    connections: list[Connections | None] = [None]
    try:
        # A process entry point is this process's `main`: the one place it starts an event loop.
        run_loop(_worker(plan, conn, connections), loop)
    except BaseException as exc:  # reported to the parent, which raises it as a ReplayError
        error = f"{type(exc).__name__}: {exc}"
    try:
        conn.send(WorkerExit(plan.worker, error, connections[0]))
    except OSError:
        pass
    conn.close()


async def _worker(plan: WorkerPlan, conn: Connection, connections: list[Connections | None]) -> None:
    loop = asyncio.get_running_loop()
    source = PipeSource(plan.worker, conn)
    watch_pipe(loop, conn, source.on_readable)
    try:
        await run_worker(plan, source, connections)
    finally:
        loop.remove_reader(conn.fileno())


async def run_worker(plan: WorkerPlan, source: RemoteSource, connections: list[Connections | None]) -> None:
    """One worker's whole life, whatever carries its messages: ready once the client is open; on
    `Start`, warm the connections (all workers start together, so none idles past the pool's
    max_idle_s waiting for a slow one), then run. `connections[0]` gets what its sockets did,
    also when it fails."""
    counter = load_counter(plan.tokenizer, plan.profile)
    async with open_client(plan) as client:
        scheduler = Scheduler(plan, source, client, counter=counter)
        source.scheduler = scheduler
        await scheduler.read_first_wave()  # before the sockets are warmed (they may idle out meanwhile)
        source.send(WorkerReady(plan.worker))
        await source.started.wait()
        status = asyncio.create_task(_report_status(plan.worker, scheduler, source))
        try:
            if not source.stop_event.is_set():
                await prewarm(client, len(plan.slots))
            await scheduler.run()
        finally:
            status.cancel()
            connections[0] = connections_of(client)


async def _report_status(worker: int, scheduler: Scheduler, source: RemoteSource) -> None:
    last = (-1, -1)
    while True:
        now = (scheduler.active, scheduler.waiting)
        if now != last:
            source.send(SlotStatus(worker, *now))
            last = now
        await asyncio.sleep(0.25)
