"""Which event loop a replay runs on (replay.client.eventloop): uvloop where installed, asyncio on request."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import threading

import pytest

from replay import ReplayError
from replay.client.eventloop import ENV, current_loop, event_loop, run_loop, watch_pipe


@pytest.fixture
def needs_uvloop() -> None:
    """uvloop is a dependency wherever it builds (not Windows): the tests of it skip elsewhere."""
    pytest.importorskip("uvloop", reason="uvloop does not build here (Windows)")


async def _kind() -> str | None:
    return current_loop()


@pytest.mark.usefixtures("needs_uvloop")
def test_uvloop_is_the_default_and_the_loop_really_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert event_loop() == "uvloop" and run_loop(_kind()) == "uvloop"


@pytest.mark.usefixtures("needs_uvloop")
def test_the_environment_or_the_caller_chooses_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "asyncio")
    assert run_loop(_kind()) == "asyncio"
    assert run_loop(_kind(), "uvloop") == "uvloop"  # an explicit choice wins over the variable
    assert asyncio.run(_kind()) == "asyncio"


def test_an_unknown_loop_is_refused_with_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "trio")
    with pytest.raises(ReplayError, match=f"'trio' \\(from \\${ENV}"):
        event_loop()


@pytest.mark.usefixtures("needs_uvloop")
def test_a_watched_pipe_carries_a_message_larger_than_the_pipe_on_uvloop() -> None:
    # libuv makes a watched descriptor non-blocking; a 1 MiB record would then fail halfway
    parent, child = mp.Pipe()
    big = b"x" * (1 << 20)

    async def receive() -> bytes:
        loop = asyncio.get_running_loop()
        got: asyncio.Future[bytes] = loop.create_future()

        def readable() -> None:
            if not got.done():
                got.set_result(parent.recv())

        watch_pipe(loop, parent, readable)
        assert os.get_blocking(parent.fileno())
        threading.Thread(target=child.send, args=(big,), daemon=True).start()
        try:
            return await asyncio.wait_for(got, 10)
        finally:
            loop.remove_reader(parent.fileno())

    assert run_loop(receive(), "uvloop") == big
