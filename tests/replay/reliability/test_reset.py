"""A request is written at most once (replay.client.transport): a connection the server drops after the
request went out fails the turn as `reset`, with its time; only a kept-alive socket the server had
closed before anything was written is replaced, silently. Real loopback servers that count."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostile import Conn, HostileServer, Request, answer, reset_after
from reliability_helpers import summary_of

from replay.client.transport import FastTransport
from replay.config import RunConfig
from replay.results.records import read_records
from replay.run import run_replay


def replay(shards: Path, out: Path, url: str, **kw: Any) -> Path:
    return asyncio.run(run_replay(RunConfig(shards=str(shards), endpoint=url, out=str(out), progress="none", **kw)))


@pytest.mark.slow
def test_a_request_reset_right_after_it_was_written_is_failed_never_resent(
    make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    # Every third turn request is read, then the connection is reset: on a kept-alive socket,
    # before any response byte. The old transport resent those on a fresh socket and the turn
    # "succeeded": the server saw more requests than turns were issued, the summary no failure.
    shards = make_shards({f"t{i}": [0.0] * 4 for i in range(6)})
    with HostileServer(reset_after(0.0, every=3)) as srv:
        run_dir = replay(shards, tmp_path / "run", srv.url, concurrency=2)
    records = list(read_records(run_dir))
    issued = [r for r in records if r.error_kind != "aborted"]
    resets = [r for r in records if r.error_kind == "reset"]
    assert srv.requests == len(issued)  # one request per issued turn, none sent twice
    assert len(resets) == srv.requests // 3 > 0
    assert all("not resent" in (r.error_message or "") and r.t_last_ns is not None for r in resets)
    s = summary_of(run_dir)
    ours = s["trajbench"]
    assert ours["turns"]["failed"] == len(resets) and ours["errors_by_kind"]["reset"] == len(resets)
    assert "reset" in (run_dir / "report.txt").read_text()


def test_a_reset_two_seconds_into_a_request_is_a_failure_that_keeps_its_time(
    make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    shards = make_shards({"slow": [0.0, 0.0, 0.0]})
    with HostileServer(reset_after(2.0, every=2)) as srv:
        run_dir = replay(shards, tmp_path / "run", srv.url)
    first, second, third = read_records(run_dir)
    assert (first.error_kind, second.error_kind, third.error_kind) == (None, "reset", "aborted")
    assert second.t_last_ns is not None and (second.t_last_ns - second.t_send_ns) / 1e9 >= 1.9  # its time counts
    assert srv.requests == 2  # the reset turn was not sent again
    s = summary_of(run_dir)
    ours = s["trajbench"]
    assert (ours["turns"]["sent"], ours["turns"]["failed"], ours["errors_by_kind"]) == (
        2,
        1,
        {"aborted": 1, "reset": 1},
    )
    assert (s["n_samples_issued"], s["n_samples_failed"]) == (3, 2)  # the reference counts the aborted turn too


def _close_when_idle(conn: Conn, req: Request, n: int) -> bool:
    """Answer, then close the kept-alive socket shortly after, as servers do with idle ones."""
    answer(conn, req, n)
    time.sleep(0.05)
    return False


def test_an_idle_socket_the_server_closed_is_replaced_silently(
    make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    shards = make_shards({"idle": [0.0, 0.3, 0.3]})  # each later turn finds its socket closed
    with HostileServer(_close_when_idle) as srv:
        run_dir = replay(shards, tmp_path / "run", srv.url)
    records = list(read_records(run_dir))
    assert [r.error_kind for r in records] == [None, None, None]
    assert srv.requests == 3


def test_the_transport_counts_silent_reconnects_then_stops_reusing() -> None:
    """The first idle socket found closed is replaced (counted); from then on the pool knows the
    server closes its sockets early and opens a fresh one per request, so nothing more is lost."""

    async def go(srv: HostileServer) -> FastTransport:
        transport = FastTransport(2)
        async with httpx.AsyncClient(transport=transport) as c:
            for n in range(1, 4):
                assert (await c.post(srv.url + "/v1/chat/completions", content=b"{}")).status_code == 200
                while srv.closed < n:  # the server closes the idle socket meanwhile
                    await asyncio.sleep(0.01)
        return transport

    with HostileServer(_close_when_idle) as srv:
        transport = asyncio.run(asyncio.wait_for(go(srv), 60))
    assert (srv.requests, srv.connections, transport.reconnects, transport.keeps_alive) == (3, 3, 1, False)
