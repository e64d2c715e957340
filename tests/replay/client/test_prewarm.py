"""Pre-warmed connections (replay.client.transport `prewarm`): a worker's sockets open before its first
request, so no measured turn pays for TCP set-up; a server that closes sockets after each answer
(llama.cpp's cpp-httplib) still gets every turn through; every socket opened is counted."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback_server import LoopbackServer, Reply
from raw_server import Exchange, RawServer, plain

from replay.client import Connections
from replay.client.transport import FastTransport
from replay.config import RunConfig
from replay.run import run_replay


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


async def ok(ex: Exchange) -> None:
    ex.write(plain(200, b"ok"))


def test_prewarm_opens_the_slots_sockets_and_requests_use_them() -> None:
    async def go() -> None:
        async with RawServer(ok) as srv:
            tr = FastTransport(4)
            async with httpx.AsyncClient(transport=tr) as c:
                url = httpx.URL(srv.url + "/")
                assert await tr.prewarm(url, 4) == 4
                assert (srv.books.connections, len(srv.books.requests)) == (4, 0)
                assert await tr.prewarm(url, 4) == 0  # the pool is full already
                await asyncio.gather(*(c.get(url) for _ in range(4)))
                assert await tr.prewarm(url, 4) == 0  # never once requests have started
            assert (srv.books.connections, len(srv.books.requests)) == (4, 4)
            assert tr.stats() == Connections(4, 0, 0, 0, 0, True)

    run(go())


def test_no_prewarm_for_a_server_known_to_close_after_each_answer() -> None:
    async def go() -> None:
        async with RawServer(ok) as srv:
            tr = FastTransport(4, reuse=False)
            async with httpx.AsyncClient(transport=tr):
                assert await tr.prewarm(httpx.URL(srv.url + "/"), 4) == 0
            assert srv.books.connections == 0
            assert tr.stats() == Connections(0, 0, 0, 0, 0, False)

    run(go())


def test_warm_sockets_of_a_server_that_closes_after_each_answer_lose_no_turn() -> None:
    """Not known in advance (--skip-preflight): the warm sockets carry the first turns, then the
    pool finds them closed before writing, replaces them (counted) and stops reusing."""

    async def closes(ex: Exchange) -> None:
        ex.write(plain(200, b"ok"))
        ex.close()

    async def go() -> None:
        async with RawServer(closes) as srv:
            tr = FastTransport(2)
            async with httpx.AsyncClient(transport=tr) as c:
                url = httpx.URL(srv.url + "/")
                assert await tr.prewarm(url, 2) == 2
                for _ in range(3):
                    got = await asyncio.gather(c.get(url), c.get(url))
                    assert [r.content for r in got] == [b"ok", b"ok"]
                    await asyncio.sleep(0.05)
            assert len(srv.books.requests) == 6
            s = tr.stats()
            assert (s.prewarmed, s.opened_in_run, s.kept_alive) == (2, 4, False)
            assert s.reconnects >= 1

    run(go())


def test_a_socket_that_cannot_be_opened_is_counted_not_raised() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused

        async def go() -> None:
            tr = FastTransport(3)
            assert await tr.prewarm(httpx.URL(f"http://127.0.0.1:{port}/"), 3) == 0
            assert tr.stats() == Connections(0, 3, 0, 0, 0, True)
            await tr.aclose()

        run(go())


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_run_warms_every_slot_and_reports_its_sockets(sample_shards: Path, tmp_path: Path, workers: int) -> None:
    with LoopbackServer(lambda b, h: Reply(chunks=3)) as srv:
        cfg = RunConfig(
            shards=str(sample_shards),
            endpoint=srv.base_url,
            concurrency=4,
            workers=workers,
            inject_delays=False,
            skip_preflight=True,
            progress="none",
            out=str(tmp_path / "run"),
            # the profile's 0.5 s idle limit would expire a prewarmed socket a loaded machine is slow
            # to use: this test is about the prewarm, not the idle limit
            max_idle=60.0,
        )
        run_dir = asyncio.run(run_replay(cfg))
    summary = json.loads((run_dir / "performance" / "result_summary.json").read_text())
    conns = summary["trajbench"]["connections"]
    assert conns == {
        "prewarmed": 4,
        "prewarm_failed": 0,
        "opened_in_run": 0,
        "reconnects": 0,
        "expired": 0,
        "kept_alive": True,
    }
    assert "connections   4 opened before the first request, 0 during the run" in (run_dir / "report.txt").read_text()
