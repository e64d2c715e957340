"""How a run's slots are driven: the `Backend` interface and the in-process backend (one worker).

A backend runs the slots against one parent-held `Coordinator` (FIFO, window, record stamping)
and feeds every finished record to the run's sink. Each worker opens its slots' connections
before its first request (`prewarm`) and reports what its sockets did at the end (`connections`). `LocalBackend` runs a single worker's
`Scheduler` on the caller's event loop, with no process or pipe in between: the default for
`--workers 1`, fast and easy to debug. `replay.loop.workers.ProcessBackend` spreads the slots over
processes behind the same interface.
"""

from __future__ import annotations

import asyncio
import functools
import operator
from collections.abc import Callable
from typing import Any, Protocol

import traces

from ..client import Connections
from ..errors import ReplayError
from ..results import Record
from .coordinator import Coordinator, Stop
from .scheduler import Scheduler, WorkerPlan

Sink = Callable[[Record], None]


class Backend(Protocol):
    async def run(self) -> None: ...

    def stop(self, *, cancel: bool) -> None: ...

    def status(self) -> tuple[int, int]:
        """(requests in flight, slots waiting out a delay) over all workers."""

    def connections(self) -> Connections | None:
        """What the workers' sockets did, summed (None when a client could not say)."""


async def prewarm(client: Any, slots: int) -> None:
    """Open a worker's connections before its first request, when its client can (an injected
    test client need not)."""
    warm = getattr(client, "prewarm", None)
    if warm is not None:
        await warm(slots)


def connections_of(client: Any) -> Connections | None:
    stats = getattr(client, "connections", None)
    return stats() if stats is not None else None


def load_counter(spec: str | None, profile: str | traces.Profile) -> Any:
    """The client-side tokenizer, when one was asked for (traces.tokenizers may be absent)."""
    if spec is None:
        return None
    try:
        from traces.tokenizers import load_tokenizer
    except ImportError:
        raise ReplayError(
            f"--tokenizer {spec}: this trajbench has no traces.tokenizers module; drop --tokenizer"
        ) from None
    prof = traces.get_profile(profile) if isinstance(profile, str) else profile
    return load_tokenizer(spec, template_kwargs=dict(prof.chat_template_kwargs))


def open_client(plan: WorkerPlan) -> Any:
    from ..client import FastTransport, StreamClient

    limits = plan.limits.for_slots(len(plan.slots))  # the slots share the worker's memory budget
    transport = FastTransport(len(plan.slots), limits=limits, reuse=plan.reuse_connections, max_idle_s=plan.max_idle_s)
    return StreamClient(
        plan.base_url,
        max_connections=len(plan.slots),
        api_key=plan.api_key,
        limits=limits,
        transport=transport,
        keep_header=plan.replica_header,
    )


class WorkerFleet:
    """What the backends of several workers share (processes, Ray actors): the live-display
    counts each worker reports, the stop broadcast and the summed socket counts. A subclass sets
    `coordinator`, `worker_ids`, `_status` and `_connections`, and says how to `_broadcast`."""

    coordinator: Coordinator
    worker_ids: list[int]
    _status: dict[int, tuple[int, int]]
    _connections: dict[int, Connections | None]

    def _broadcast(self, msg: object) -> None:
        raise NotImplementedError

    def stop(self, *, cancel: bool) -> None:
        self.coordinator.stop()
        self._broadcast(Stop(cancel))

    def status(self) -> tuple[int, int]:
        return sum(a for a, _ in self._status.values()), sum(w for _, w in self._status.values())

    def connections(self) -> Connections | None:
        """Summed over the workers; None unless every worker said (a crashed or lost one cannot)."""
        known = [c for w in self.worker_ids if (c := self._connections.get(w)) is not None]
        return functools.reduce(operator.add, known) if known and len(known) == len(self.worker_ids) else None


class LocalSource:
    """The scheduler's view of an in-process coordinator."""

    def __init__(self, coordinator: Coordinator, sink: Sink) -> None:
        self.coordinator = coordinator
        self.sink = sink
        self.stop_event = asyncio.Event()

    async def next_instance(self, slot: int, finished: bool, t_done_ns: int | None = None) -> int | None:
        ordinal = self.coordinator.next_instance(finished, t_done_ns)
        if self.coordinator.stopped:
            self.stop_event.set()
        return ordinal

    def emit(self, record: Record) -> None:
        self.sink(self.coordinator.stamp(record))


class LocalBackend:
    def __init__(
        self,
        plan: WorkerPlan,
        coordinator: Coordinator,
        sink: Sink,
        *,
        client_factory: Callable[[WorkerPlan], Any] = open_client,
        counter: Any = None,
        shards: traces.Shards | None = None,
    ) -> None:
        self.plan = plan
        self.counter = counter
        self.shards = shards  # the run's own, verified and open (None: open `plan.shards`)
        self.source = LocalSource(coordinator, sink)
        self.coordinator = coordinator
        self._client_factory = client_factory
        self._scheduler: Scheduler | None = None
        self._connections: Connections | None = None

    async def run(self) -> None:
        async with self._client_factory(self.plan) as client:
            self._scheduler = Scheduler(self.plan, self.source, client, counter=self.counter, shards=self.shards)
            try:
                await self._scheduler.read_first_wave()  # first: a warm socket may expire while it reads
                if not self.source.stop_event.is_set():
                    await prewarm(client, len(self.plan.slots))
                await self._scheduler.run()
            finally:
                self._connections = connections_of(client)

    def connections(self) -> Connections | None:
        return self._connections

    def stop(self, *, cancel: bool) -> None:
        self.coordinator.stop()
        self.source.stop_event.set()
        if cancel and self._scheduler is not None:
            self._scheduler.cancel()

    def status(self) -> tuple[int, int]:
        s = self._scheduler
        return (s.active, s.waiting) if s is not None else (0, 0)
