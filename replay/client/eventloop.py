"""The event loop a replay's client processes run on: uvloop where it is installed, else asyncio's.

uvloop (a dependency on Linux and macOS) runs the same code on libuv's C loop: every socket read
of a streamed answer passes through the loop, and there uvloop costs less than asyncio's Python
selector loop. Measured by `trajbench replay calibrate --compare trajbench-asyncio` on a 2-core
host, C=128: about 15-20 % less client CPU per turn and a lower timing error in the paced phase
(docs/metrics.md). `TRAJBENCH_EVENT_LOOP=asyncio` forces the standard loop, e.g. to rule uvloop
out while debugging; run.json records the loop a run used.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Callable, Coroutine, Iterator
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from ..errors import ReplayError

ENV = "TRAJBENCH_EVENT_LOOP"
LOOPS = ("asyncio", "uvloop")

T = TypeVar("T")


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def event_loop(requested: str | None = None) -> str:
    """The loop to run: `requested`, else $TRAJBENCH_EVENT_LOOP, else uvloop if installed."""
    name = requested or os.environ.get(ENV) or ("uvloop" if _has_uvloop() else "asyncio")
    if name not in LOOPS:
        raise ReplayError(f"event loop {name!r} (from ${ENV} or --loop): choose one of {', '.join(LOOPS)}")
    if name == "uvloop" and not _has_uvloop():
        raise ReplayError(f"uvloop is not installed; `pip install uvloop` or set {ENV}=asyncio")
    return name


def current_loop() -> str | None:
    """The kind of the running event loop ("uvloop" or "asyncio"; None outside one): what run.json records."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def watch_pipe(
    loop: asyncio.AbstractEventLoop, conn: Connection, callback: Callable[..., object], *args: object
) -> None:
    """`loop.add_reader` for a multiprocessing pipe, which must stay blocking.

    `Connection.recv` reads a whole message and `send` writes one, which a blocking descriptor
    guarantees. uvloop (libuv) switches a watched descriptor to non-blocking, and then a message
    larger than what the pipe holds fails halfway with BlockingIOError; readiness is all the loop
    needs to know, so the descriptor is put back to blocking."""
    loop.add_reader(conn.fileno(), callback, *args)
    os.set_blocking(conn.fileno(), True)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """While streaming: what was alive before is out of the cyclic collector's sight.

    A full collection walks every tracked object; a client process holds hundreds of thousands
    from its imports and shards, and walking them took ~20 ms at a time (measured with
    gc.callbacks in a calibration client), every such pause a late read and a timing error.
    Collected once, then frozen (`gc.freeze`), they are skipped: the collections during the run
    only walk what the run made. Unfrozen on the way out, so a process that runs again is as before.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_loop(coro: Coroutine[Any, Any, T], loop: str | None = None) -> T:
    """`asyncio.run(coro)` on the chosen loop (see `event_loop`)."""
    if event_loop(loop) == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)
