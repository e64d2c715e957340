"""Replay test fixtures: the embedded simulator as a real loopback server in a child process.

`start_sim(**options)` starts (or reuses, for identical options) a simulator with those SimConfig
fields and returns its handle (`.base_url`, `.metrics()`); `start_sim(fresh=True, ...)` always
starts a new one (tests that read /metrics totals). `sim_server` is the base URL of a zero-latency
simulator; parametrise it indirectly with a dict of options. Servers stop at session end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import build_shards

from replay.sim import SimConfig, SimHandle, start_simulator

#: Zero modelled latency: tests exercise shapes and bookkeeping, never wait for modelled time.
ZERO_LATENCY: dict[str, Any] = {"step_base_ms": 0.0, "prefill_ms_per_token": 0.0, "batch_ms_per_seq": 0.0}


@pytest.fixture(scope="session")
def start_sim() -> Iterator[Callable[..., SimHandle]]:
    stack = ExitStack()
    shared: dict[tuple[tuple[str, Any], ...], SimHandle] = {}

    started: list[SimHandle] = []

    def start(fresh: bool = False, **options: Any) -> SimHandle:
        key = tuple(sorted(options.items()))
        if fresh or key not in shared:
            handle = stack.enter_context(start_simulator(SimConfig(**options)))
            started.append(handle)
            if fresh:
                return handle
            shared[key] = handle
        return shared[key]

    with stack:
        yield start
        for handle in started:  # signal all first, so they shut down in parallel
            handle.process.terminate()


@pytest.fixture
def sim_server(start_sim: Callable[..., SimHandle], request: pytest.FixtureRequest) -> str:
    options = getattr(request, "param", None) or {}
    return start_sim(**{**ZERO_LATENCY, **options}).base_url


@pytest.fixture
def make_shards(tmp_path: Path) -> Callable[..., Path]:
    """`make_shards({"t1": [0.0, 0.0]})`: built shards, one user turn per delay (tests/replay/reliability)."""
    names = count()
    return lambda trajectories, name=None: build_shards(tmp_path, trajectories, name or f"s{next(names)}")
