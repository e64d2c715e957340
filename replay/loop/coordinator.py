"""The run's one FIFO and performance window (docs/closed-loop.md), and the messages workers exchange with it.

The coordinator is plain synchronous state with no I/O: it hands out instance ordinals in FIFO
order, closes the window the first time a slot finishes a trajectory and finds the FIFO empty, and
stamps each finished record's `in_window` flag. Because it is the only judge of the window and the
only writer of records, a record is "in window" exactly when its request was sent before the close
moment, whichever worker sent it.

The messages are small frozen dataclasses (picklable, transport-agnostic): the process backend
carries them over pipes, and a Ray or network backend can carry the very same objects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ..client import Connections
from ..results import Record


# ---- worker → coordinator
@dataclass(frozen=True)
class WorkerReady:
    """A worker is up (imports done, client open) and waits for `Start`."""

    worker: int


@dataclass(frozen=True)
class NextInstance:
    """A slot asks for its next trajectory instance; `finished` when it just ended one, at `t_ns`
    on the worker's clock (the moment the window closes if the FIFO is empty, not the later one
    at which the message is handled)."""

    worker: int
    slot: int
    finished: bool
    request_id: int
    t_ns: int | None = None


@dataclass(frozen=True)
class TurnDone:
    """A finished (or failed, aborted, cancelled) turn; the coordinator stamps and writes it."""

    record: Record


@dataclass(frozen=True)
class SlotStatus:
    """Live-display counts of one worker: requests in flight and slots waiting out a delay."""

    worker: int
    active: int
    waiting: int


@dataclass(frozen=True)
class WorkerExit:
    """A worker ended; `error` is set when it crashed (the run reports it)."""

    worker: int
    error: str | None = None
    connections: Connections | None = None  # what its sockets did (None: its client could not say)


# ---- coordinator → worker
@dataclass(frozen=True)
class Start:
    """Broadcast once every worker is ready, so all slots begin together (no start-up skew)."""


@dataclass(frozen=True)
class Assign:
    """Answer to NextInstance: the FIFO ordinal to run, or None (nothing left for this slot)."""

    request_id: int
    ordinal: int | None


@dataclass(frozen=True)
class WindowClosed:
    """Broadcast once: the window closed at `t_close_ns`; `stop` when issuing must end now."""

    t_close_ns: int
    stop: bool


@dataclass(frozen=True)
class Stop:
    """Stop issuing (Ctrl-C); `cancel` also cancels the turns in flight (after the drain time)."""

    cancel: bool


#: Records whose t_send_ns is not a send: the time a turn was given up (aborted after an earlier
#: failure) or its worker was found lost; they never hold the window open.
_UNSENT = ("aborted", "worker-lost")


class Coordinator:
    """FIFO of instance ordinals 0..num_instances-1 and the performance window."""

    def __init__(self, num_instances: int, *, stop_at_window_end: bool, clock=time.monotonic_ns) -> None:  # type: ignore[no-untyped-def]
        self.num_instances = num_instances
        self.stop_at_window_end = stop_at_window_end
        self.issued = 0
        self.window_close_ns: int | None = None
        self.stopped = False
        self._clock = clock
        self._latest_in = -1  # the latest send stamped in the window while it was still open

    def next_instance(self, finished: bool, t_ns: int | None = None) -> int | None:
        """The next ordinal, or None. Closes the window when a slot that just finished a
        trajectory finds the FIFO empty (a slot idle from the start does not close it), at
        `t_ns`, when the slot finished (on this clock, and not after now: a mis-estimated clock
        offset), else now; but never before a send already judged in the window (its record can
        arrive before the request that closes it), so no send is judged both ways."""
        if self.stopped:
            return None
        if self.issued < self.num_instances:
            self.issued += 1
            return self.issued - 1
        if finished and self.window_close_ns is None:
            now = self._clock()
            self.window_close_ns = now if t_ns is None else max(min(t_ns, now), self._latest_in + 1)
            if self.stop_at_window_end:
                self.stopped = True
        return None

    def stop(self) -> None:
        self.stopped = True

    def in_window(self, t_send_ns: int) -> bool:
        return self.window_close_ns is None or t_send_ns < self.window_close_ns

    def stamp(self, record: Record) -> Record:
        """The record with its window flag decided here, the one place that knows the close."""
        flag = self.in_window(record.t_send_ns)
        if self.window_close_ns is None and record.error_kind not in _UNSENT:
            self._latest_in = max(self._latest_in, record.t_send_ns)
        return record if record.in_window == flag else replace(record, in_window=flag)
