"""`--jobs N`: a function over a stream of items in N worker processes, results in input order.

`traces build` and `traces stats` do the same work per trajectory whatever its neighbours, then
fold the results in order (the shard writer, the content hash, the statistics). So the per-item
work goes to processes and the fold stays in the caller, seeing results in exactly the order
`--jobs 1` would: the output is the same bytes. At most `window` items are in flight, so memory
follows the largest item, not the dataset. Workers are spawned (not forked: the caller may hold
threads, e.g. pyarrow's), and `initializer(*initargs)` sets up each one once (a tokenizer, the
shards) so items carry only what differs.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from .errors import TraceError

T = TypeVar("T")
R = TypeVar("R")


def check_jobs(jobs: int) -> None:
    if jobs < 1:
        raise TraceError(f"--jobs must be >= 1, got {jobs}")


def _call(fn: Callable[[T], R], item: bytes) -> R:
    return fn(pickle.loads(item))


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    jobs: int,
    *,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    window: int | None = None,
) -> Iterator[R]:
    """`map(fn, items)` over `jobs` processes, in order, with at most `window` (default 4 per job)
    items submitted ahead. A worker's exception is raised here, at its item's place; the pool
    is shut down (pending items cancelled) when the caller stops early or fails."""
    check_jobs(jobs)
    ahead = window if window is not None else 4 * jobs
    pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=initializer, initargs=initargs)
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            # pickled here, so an item that cannot be shipped fails in the caller (a pickling
            # error inside the pool's feeder thread can leave the pool hung)
            pending.append(pool.submit(_call, fn, pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
