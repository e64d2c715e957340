"""`--backend ray`: a run's workers as Ray actors spread over a cluster's nodes (docs/ray.md).

One machine's NIC and cores cap what one client can offer a rack-scale system, so the workers
move to other hosts while the driver keeps what must stay single: the one `Coordinator` (FIFO,
window, record stamping) and the one record writer. Each actor runs the very worker the process
backend runs (`replay.loop.workers.run_worker`: one event loop, one client, its share of the slots);
only the transport differs. The driver long-polls each actor's outbox: a poll returns at once
when a slot asks for work (or a worker is ready or ends) and otherwise lingers a few
milliseconds so finished records travel in batches, not one Ray call per turn. The answers to a
batch (`Assign`s) ride on the next poll; the rare broadcasts (`Start`, `WindowClosed`, `Stop`)
are one call each. Their order does not matter (an `Assign` answers one request id, the others
only set flags).

Clocks: a worker times its turns on its own monotonic clock. The driver estimates each worker's
offset (round-trip midpoint, the sample with the shortest round trip wins, its half round trip
is the uncertainty) before the start and again every `CLOCK_RECHECK_S`, keeps the tightest
estimate so far (a re-check over a busy link must not replace a better one), and maps every
timestamp of an arriving record by that offset: one constant per record, so a latency (a difference
within one record) is exactly the worker's own, while the window rule and the run's wall clock
compare times on one clock. A send within the uncertainty of the close is decided by the
estimate (the most likely order) and counted in run.json (`ray.window_edge_turns`).

Faults: an actor that dies fails its slots' unfinished instances where the coordinator is (the
driver rebuilds them from the shards): a turn without a record may have been answered with its
record still in the actor's unsent batch, so each is `worker-lost` (fate unknown), unless its
recorded delays prove it was never sent (then aborted by the failure rule); the run goes on with
the others, or stops below `min_workers`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from ..client import Connections
from ..errors import ReplayError
from ..results import RayRun, RayWorkerInfo, Record
from .backend import Sink, WorkerFleet
from .coordinator import (
    Assign,
    Coordinator,
    NextInstance,
    SlotStatus,
    Start,
    TurnDone,
    WindowClosed,
    WorkerExit,
    WorkerReady,
)
from .scheduler import Scheduler, WorkerPlan
from .workers import RemoteSource, run_worker

#: How long a poll holds records back for a fuller batch (a request for work never waits).
LINGER_S = 0.02
#: Clock samples per estimate, and seconds between re-checks during the run.
CLOCK_SAMPLES = 8
CLOCK_RECHECK_S = 5.0
#: Seconds the actors have to be placed and answer before the run gives up.
START_TIMEOUT_S = 120.0
#: Ray namespace of the actors (`ray list actors` shows them as trajbench-<driver pid>-w<N>).
NAMESPACE = "trajbench"
INSTALL_HINT = "pip install 'trajbench[ray]'"


def import_ray() -> Any:
    """Ray, or the error that says how to get it (Ray is an optional extra)."""
    try:
        import ray
    except ImportError:
        raise ReplayError(f"--backend ray needs Ray, which is not installed: {INSTALL_HINT} (docs/ray.md)") from None
    return ray


def connect(ray: Any, address: str) -> None:
    """Join the cluster at `address` ("auto": the one running on this host) as its driver, once."""
    if ray.is_initialized():
        return
    try:
        ray.init(address=address, namespace=NAMESPACE, logging_level=logging.WARNING, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ReplayError(
            f"--ray-address {address}: no Ray cluster to join ({exc}); start one with `ray start --head` "
            "(docs/ray.md) or pass its HOST:PORT"
        ) from None


@dataclass(frozen=True)
class ClockSample:
    """One round trip: the worker's clock minus the driver's midpoint, ± half the round trip."""

    offset_ns: int
    uncertainty_ns: int


def clock_sample(t0_ns: int, worker_ns: int, t1_ns: int) -> ClockSample:
    """NTP's midpoint: the worker read its clock somewhere between the driver's t0 and t1."""
    return ClockSample(worker_ns - (t0_ns + t1_ns) // 2, (t1_ns - t0_ns + 1) // 2)


@dataclass
class WorkerClock:
    """A worker's offset: the tightest sample of every check so far (the latest of equals), and
    the best of each check (their range shows how far the estimate moved)."""

    current: ClockSample | None = None
    checks: list[ClockSample] = field(default_factory=list)

    def check(self, samples: list[ClockSample]) -> None:
        best = min(samples, key=lambda s: s.uncertainty_ns)
        if self.current is None or best.uncertainty_ns <= self.current.uncertainty_ns:
            self.current = best
        self.checks.append(best)

    def to_driver(self, t_ns: int) -> int:
        return t_ns - (self.current.offset_ns if self.current is not None else 0)


def shift_record(record: Record, delta_ns: int) -> Record:
    """Every timestamp of a record moved by one constant (its latencies unchanged)."""
    if delta_ns == 0:
        return record
    return replace(
        record,
        t_send_ns=record.t_send_ns + delta_ns,
        t_first_ns=None if record.t_first_ns is None else record.t_first_ns + delta_ns,
        t_last_ns=None if record.t_last_ns is None else record.t_last_ns + delta_ns,
        chunk_ns=tuple(t + delta_ns for t in record.chunk_ns),
    )


_URGENT = (NextInstance, WorkerReady, WorkerExit)


class RayWorker:
    """The actor (made remote by `RayBackend`): `run_worker` on the actor's event loop, with an
    outbox the driver polls and `deliver` for what the driver sends."""

    def __init__(self) -> None:
        self._out: list[object] = []
        self._any = asyncio.Event()
        self._urgent = asyncio.Event()
        self._source: RemoteSource | None = None
        self._early: list[object] = []

    async def node(self) -> tuple[str, str, str]:
        """(Ray node id, node IP, host name) of where this actor runs."""
        import ray

        util: Any = ray.util  # untyped
        return ray.get_runtime_context().get_node_id(), util.get_node_ip_address(), socket.gethostname()

    async def clock(self) -> int:
        return time.monotonic_ns()

    async def run(self, plan: WorkerPlan) -> None:
        source = RemoteSource(plan.worker, self._put)
        self._source = source
        for msg in self._early:
            source.handle(msg)
        connections: list[Connections | None] = [None]
        error: str | None = None
        try:
            await run_worker(plan, source, connections)
        except Exception as exc:  # reported to the driver, which raises it as a ReplayError
            error = f"{type(exc).__name__}: {exc}"
        self._put(WorkerExit(plan.worker, error, connections[0]))

    def _put(self, msg: object) -> None:
        self._out.append(msg)
        self._any.set()
        if isinstance(msg, _URGENT):
            self._urgent.set()

    async def poll(self, linger_s: float, inbox: list[object]) -> list[object]:
        """Takes the driver's answers to the last batch (`inbox`: the `Assign`s, riding on this
        call instead of one call each), then returns everything sent since the last poll: waits
        for the first message, then up to `linger_s` more for a batch unless something urgent
        is already waiting."""
        await self.deliver(inbox)
        await self._any.wait()
        if not self._urgent.is_set():
            try:
                await asyncio.wait_for(self._urgent.wait(), linger_s)
            except TimeoutError:
                pass
        out, self._out = self._out, []
        self._any.clear()
        self._urgent.clear()
        return out

    async def deliver(self, msgs: list[object]) -> None:
        for msg in msgs:
            if self._source is None:
                self._early.append(msg)
            else:
                self._source.handle(msg)


class RayBackend(WorkerFleet):
    """N Ray actors, one per plan; the driver's event loop serves the coordinator."""

    def __init__(
        self,
        plans: list[WorkerPlan],
        coordinator: Coordinator,
        sink: Sink,
        *,
        address: str = "auto",
        resource: str | None = None,
        min_workers: int = 1,
    ) -> None:
        # the shards by absolute path: an actor's working folder is not the driver's
        self.plans = {p.worker: replace(p, shards=str(Path(p.shards).resolve())) for p in plans}
        self.worker_ids = list(self.plans)
        self.coordinator = coordinator
        self.sink = sink
        self.address = address
        self.resource = resource
        self.min_workers = min_workers
        self._ray: Any = None
        self._actors: dict[int, Any] = {}
        self._live: set[int] = set()
        self._ready: set[int] = set()
        self._nodes: dict[int, tuple[str, str, str]] = {}
        self._clocks = {w: WorkerClock() for w in self.plans}
        self._lost: dict[int, str] = {}
        self._status: dict[int, tuple[int, int]] = {}
        self._replies: dict[int, list[object]] = {w: [] for w in self.plans}
        self._connections: dict[int, Connections | None] = {}
        self._current: dict[tuple[int, int], int] = {}  # (worker, slot) → ordinal it runs
        # (worker, slot, logical instance id) → its turns recorded, and the latest moment (driver
        # clock) known of it: assigned, or its latest record's last byte, from which a lost
        # worker's unrecorded turns are judged. Keyed by instance: a slot's last record of one
        # instance may arrive after it asked for the next (client-side counting defers it).
        self._recorded: dict[tuple[int, int, str], set[int]] = {}
        self._known: dict[tuple[int, int, str], int] = {}
        self._assigned: dict[tuple[int, int], int] = {}  # (worker, slot) → when its instance was handed out
        self._errors: list[str] = []
        self._announced = False
        self._started = False
        self._edge_turns = 0
        self._done: asyncio.Future[None] | None = None
        self._run_id = f"{socket.gethostname()}-{time.time_ns()}"

    def _options(self, worker: int) -> dict[str, Any]:
        opts: dict[str, Any] = dict(
            num_cpus=1,  # one event loop: one core
            max_restarts=0,  # a restarted worker would not know its slots' state
            name=f"trajbench-{self._run_id}-w{worker}",
            namespace=NAMESPACE,
            scheduling_strategy="SPREAD",
        )
        if self.resource is not None:
            opts["resources"] = {self.resource: 0.001}
        return opts

    async def run(self) -> None:
        self._ray = ray = import_ray()
        connect(ray, self.address)
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        remote = ray.remote(RayWorker)
        pumps: list[asyncio.Task[None]] = []
        recheck: asyncio.Task[None] | None = None
        try:  # actors made before a failure are killed too (finally)
            for w in self.plans:
                self._actors[w] = remote.options(**self._options(w)).remote()
            await self._meet()
            self._live = set(self.plans)
            for w, plan in self.plans.items():
                self._actors[w].run.remote(plan)
                pumps.append(asyncio.create_task(self._pump(w), name=f"ray-pump-{w}"))
            recheck = asyncio.create_task(self._recheck_clocks())
            await self._done
        finally:
            for task in [*pumps, *([recheck] if recheck is not None else [])]:
                task.cancel()
            await asyncio.gather(*pumps, *([recheck] if recheck is not None else []), return_exceptions=True)
            for w in self._actors:  # frees their CPUs for the next run
                self._kill(w)
        if self._errors:
            raise ReplayError("; ".join(self._errors))

    async def _meet(self) -> None:
        """Every actor placed, its node known and its clock measured, or a clear error."""
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                for w, actor in self._actors.items():
                    self._nodes[w] = cast(tuple[str, str, str], tuple(await actor.node.remote()))
                    self._clocks[w].check(await self._samples(actor, CLOCK_SAMPLES))
        except TimeoutError:
            where = f"with resource {self.resource!r} " if self.resource else ""
            raise ReplayError(
                f"--backend ray: {len(self._actors)} workers could not be placed within {START_TIMEOUT_S:g} s; "
                f"the cluster needs {len(self._actors)} free CPUs on nodes {where}(see `ray status`, docs/ray.md)"
            ) from None
        except self._ray.exceptions.RayError as exc:
            raise ReplayError(f"--backend ray: a worker failed to start: {exc}") from None

    async def _samples(self, actor: Any, n: int) -> list[ClockSample]:
        out = []
        for _ in range(n):
            t0 = time.monotonic_ns()
            w = await actor.clock.remote()
            out.append(clock_sample(t0, w, time.monotonic_ns()))
        return out

    async def _recheck_clocks(self) -> None:
        while True:
            await asyncio.sleep(CLOCK_RECHECK_S)
            for w in sorted(self._live):
                try:
                    self._clocks[w].check(await self._samples(self._actors[w], 4))
                except Exception:
                    pass  # a dead actor is reported by its pump

    async def _pump(self, worker: int) -> None:
        actor = self._actors[worker]
        try:
            while worker in self._live:
                inbox, self._replies[worker] = self._replies[worker], []
                for msg in await actor.poll.remote(LINGER_S, inbox):
                    self._handle(worker, msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._lose(worker, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

    def _handle(self, worker: int, msg: object) -> None:
        if isinstance(msg, TurnDone):
            self._stamp(worker, msg.record)
        elif isinstance(msg, NextInstance):
            t_ns = self._clocks[worker].to_driver(msg.t_ns) if msg.t_ns is not None else None
            ordinal = self.coordinator.next_instance(msg.finished, t_ns)
            key = (worker, msg.slot)
            if ordinal is None:
                self._current.pop(key, None)
            else:
                self._current[key] = ordinal
                self._assigned[key] = time.monotonic_ns()
            self._replies[worker].append(Assign(msg.request_id, ordinal))  # rides on the next poll
            if self.coordinator.window_close_ns is not None and not self._announced:
                self._announced = True
                self._broadcast(WindowClosed(self.coordinator.window_close_ns, self.coordinator.stopped))
        elif isinstance(msg, SlotStatus):
            self._status[worker] = (msg.active, msg.waiting)
        elif isinstance(msg, WorkerReady):
            self._ready.add(worker)
            self._maybe_start()
        elif isinstance(msg, WorkerExit):
            self._connections[worker] = msg.connections
            if msg.error:
                self._errors.append(f"worker {worker}: {msg.error}")
                self._close(worker)
                self.stop(cancel=True)
            else:
                self._close(worker)

    def _stamp(self, worker: int, record: Record) -> None:
        """The record on the driver's clock, judged by the window, written."""
        key = (worker, record.slot, record.instance_id)
        self._recorded.setdefault(key, set()).add(record.turn)
        clock = self._clocks[worker]
        mapped = shift_record(record, clock.to_driver(record.t_send_ns) - record.t_send_ns)
        last = mapped.t_last_ns if mapped.t_last_ns is not None else mapped.t_send_ns
        self._known[key] = max(self._known.get(key, last), last)
        close = self.coordinator.window_close_ns
        u = clock.current.uncertainty_ns if clock.current is not None else 0
        if close is not None and record.error_kind != "aborted" and abs(mapped.t_send_ns - close) <= u:
            self._edge_turns += 1
        self.sink(self.coordinator.stamp(mapped))

    def _maybe_start(self) -> None:
        if not self._started and self._live and self._live <= self._ready:
            self._started = True
            self._broadcast(Start())

    def _lose(self, worker: int, why: str) -> None:
        """docs/ray.md: the dead worker's unfinished instances fail here (`worker-lost`, then
        aborted); below --min-workers the run stops with an error, else it goes on."""
        if worker not in self._live:
            return
        self._lost[worker] = why
        self._kill(worker)  # one that only stopped answering must not go on sending unrecorded turns
        plan = self.plans[worker]
        helper = Scheduler(plan, cast(Any, None), cast(Any, None))
        now = time.monotonic_ns()
        reason = f"worker {worker} lost: {why}"
        for slot in plan.slots:
            ordinal = self._current.pop((worker, slot), None)
            if ordinal is None:
                continue
            logical = helper.logical_of(ordinal)
            recorded = self._recorded.pop((worker, slot, logical), set())
            known = max(self._known.pop((worker, slot, logical), 0), self._assigned.pop((worker, slot), 0)) or None
            abort_rest = not self.coordinator.stopped
            lost = helper.lost_turns(slot, ordinal, recorded, now, reason, abort_rest=abort_rest, known_ns=known)
            for record in lost:
                self.sink(self.coordinator.stamp(record))
        left = len(self._live) - 1
        if left < self.min_workers and not self._errors:
            self._errors.append(
                f"worker {worker} lost ({why}); {left} of {len(self.plans)} workers left, below --min-workers "
                f"{self.min_workers}: the run stopped (docs/ray.md)"
            )
            self._close(worker)
            self.stop(cancel=True)
        else:
            self._close(worker)
            self._maybe_start()

    def _kill(self, worker: int) -> None:
        try:
            self._ray.kill(self._actors[worker], no_restart=True)
        except Exception:  # already gone (dead node, killed before): nothing to free
            pass

    def _send(self, worker: int, msg: object) -> None:
        if worker in self._live:
            self._actors[worker].deliver.remote([msg])

    def _broadcast(self, msg: object) -> None:
        for w in sorted(self._live):
            self._send(w, msg)

    def _close(self, worker: int) -> None:
        self._live.discard(worker)
        self._status.pop(worker, None)
        if not self._live and self._done is not None and not self._done.done():
            self._done.set_result(None)

    def info(self) -> RayRun:
        """run.json's `ray`: where each worker ran, its clock offset and what happened to it."""
        workers = []
        for w, plan in self.plans.items():
            node = self._nodes.get(w, ("", "", ""))
            clock = self._clocks[w]
            offsets = [s.offset_ns for s in clock.checks]
            workers.append(
                RayWorkerInfo(
                    worker=w,
                    slots=len(plan.slots),
                    node_id=node[0],
                    node_ip=node[1],
                    hostname=node[2],
                    clock_offset_ns=clock.current.offset_ns if clock.current else None,
                    clock_uncertainty_ns=clock.current.uncertainty_ns if clock.current else None,
                    clock_checks=len(clock.checks),
                    clock_offset_range_ns=max(offsets) - min(offsets) if offsets else None,
                    lost=self._lost.get(w),
                )
            )
        return RayRun(
            address=self.address,
            placement=f"resource:{self.resource}" if self.resource else "spread",
            min_workers=self.min_workers,
            workers=workers,
            window_edge_turns=self._edge_turns,
        )
