"""FastTransport under httpx against a real byte-level loopback server (replay.client.transport)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from raw_server import END, Exchange, RawServer, chunk, full_stream, plain, sse_head

from replay.client import transport as pool
from replay.client.eventloop import run_loop
from replay.client.http1 import BufferedConnection, Connection
from replay.client.transport import TIMING_EXTENSION, FastTransport, Timing

_LOOP = ["asyncio"]


@pytest.fixture(autouse=True, params=["asyncio", "uvloop"])
def loop(request: pytest.FixtureRequest) -> str:
    """Every test on both loops: each gets its own kind of connection (see replay.client.http1)."""
    if request.param == "uvloop":
        pytest.importorskip("uvloop", reason="uvloop does not build here (Windows)")
    _LOOP[0] = request.param
    return str(request.param)


def run(coro: Awaitable[Any]) -> Any:
    return run_loop(asyncio.wait_for(coro, 20), _LOOP[0])


def test_each_loop_reads_through_its_kind_of_connection(loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # asyncio's loop must read into the shared buffer (buffer_updated), uvloop hand over bytes
    buffered: list[int] = []
    real = BufferedConnection.buffer_updated

    def counted(self: BufferedConnection, n: int) -> None:
        buffered.append(n)
        real(self, n)

    monkeypatch.setattr(BufferedConnection, "buffer_updated", counted)

    async def go() -> tuple[type, bytes]:
        async with RawServer(serve(plain(200, b'{"ok": 1}'))) as srv:
            tr = FastTransport(1)
            async with httpx.AsyncClient(transport=tr) as client:
                body = (await client.get(srv.url)).content
                return type(next(iter(tr._idle.values()))[0]), body

    kind, body = run(go())
    assert body == b'{"ok": 1}'
    if loop == "uvloop":
        assert kind is Connection and not buffered
    else:
        assert kind is BufferedConnection and sum(buffered) >= len(body)


def serve(response: bytes) -> Callable[[Exchange], Awaitable[None]]:
    async def script(ex: Exchange) -> None:
        ex.write(response)

    return script


def test_request_bytes_carry_method_path_headers_and_body() -> None:
    async def go() -> None:
        async with RawServer(serve(plain(200, b"{}"))) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                r = await c.post(
                    srv.url + "/v1/chat/completions?x=1", content=b'{"a":1}', headers={"X-Session-ID": "s1"}
                )
            req = srv.books.requests[0]
            assert (r.status_code, r.json()) == (200, {})
            assert req.line == "POST /v1/chat/completions?x=1 HTTP/1.1"
            assert req.headers["x-session-id"] == "s1" and req.headers["host"] == f"127.0.0.1:{srv.port}"
            assert req.body == b'{"a":1}'

    run(go())


def test_chunked_body_is_decoded_across_split_writes() -> None:
    async def script(ex: Exchange) -> None:
        data = sse_head() + chunk(b"hello ") + chunk(b"world") + END
        for k in range(0, len(data), 7):  # frame boundaries fall anywhere
            ex.write(data[k : k + 7])
            await asyncio.sleep(0.001)

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                r = await c.get(srv.url + "/")
            assert r.content == b"hello world"

    run(go())


def test_body_until_close_without_length() -> None:
    async def script(ex: Exchange) -> None:
        ex.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it")
        ex.close()

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                assert (await c.get(srv.url + "/")).content == b"all of it"

    run(go())


def test_keep_alive_reuses_one_connection() -> None:
    async def go() -> None:
        async with RawServer(serve(full_stream("a"))) as srv:
            async with httpx.AsyncClient(transport=FastTransport(4)) as c:
                for _ in range(3):
                    async with c.stream("POST", srv.url + "/v1/chat/completions", content=b"{}") as r:
                        await r.aread()
            assert (len(srv.books.requests), srv.books.connections) == (3, 1)

    run(go())


def test_pool_never_opens_more_than_max_connections() -> None:
    async def script(ex: Exchange) -> None:
        await asyncio.sleep(0.02)
        ex.write(full_stream("a"))

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                await asyncio.gather(*(c.post(srv.url + "/", content=b"{}") for _ in range(6)))
            assert (len(srv.books.requests), srv.books.connections) == (6, 2)

    run(go())


def test_kept_alive_socket_closed_by_server_is_retried_on_a_fresh_one() -> None:
    async def script(ex: Exchange) -> None:
        ex.write(plain(200, b"ok"))
        await asyncio.sleep(0.01)
        ex.close()  # server drops idle keep-alive sockets

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                assert (await c.get(srv.url + "/")).content == b"ok"
                await srv.connections_ended()  # the server has closed the idle socket
                assert (await c.get(srv.url + "/")).content == b"ok"
            assert srv.books.connections == 2

    run(go())


def test_socket_idle_longer_than_max_idle_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server closes idle keep-alive sockets on its own clock; one that idled past `max_idle_s`
    could be closing while we write, so it is dropped unused (never a resend) and a fresh one
    carries the request. Sockets reused within `max_idle_s` stay."""

    # the pool's clock, moved on by the test: idle times of 1 s and 100 s against a limit of 10 s
    # hold however long this machine takes between requests (well under the 9 s of slack)
    skipped = [0]
    monkeypatch.setattr(pool, "time", SimpleNamespace(monotonic_ns=lambda: time.monotonic_ns() + skipped[0]))

    async def go() -> None:
        async with RawServer(serve(plain(200, b"ok"))) as srv:
            tr = FastTransport(2, max_idle_s=10)
            async with httpx.AsyncClient(transport=tr) as c:
                for idle_s in (0, 1, 100, 1):
                    skipped[0] += idle_s * 10**9
                    assert (await c.get(srv.url + "/")).content == b"ok"
            assert (len(srv.books.requests), srv.books.connections, tr.expired, tr.reconnects) == (4, 2, 1, 0)

    run(go())


def test_timing_extension_stamps_send_and_arrival() -> None:
    async def go() -> None:
        async with RawServer(serve(full_stream("a", "b"))) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                async with c.stream("POST", srv.url + "/", content=b"{}") as r:
                    timing = r.extensions[TIMING_EXTENSION]
                    assert isinstance(timing, Timing) and timing.t_send_ns > 0
                    async for _ in r.aiter_raw():
                        assert timing.last_arrival_ns >= timing.t_send_ns

    run(go())


def test_closing_a_response_early_closes_the_connection() -> None:
    async def script(ex: Exchange) -> None:
        ex.write(sse_head() + chunk(b"data: 1\n\n"))
        assert await ex.client_gone()

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                async with c.stream("POST", srv.url + "/", content=b"{}") as r:
                    async for _ in r.aiter_raw():
                        break
            await srv.connections_ended()
            assert srv.books.closed_by_client == 1

    run(go())


def test_mid_body_close_raises_remote_protocol_error() -> None:
    async def script(ex: Exchange) -> None:
        ex.write(sse_head() + chunk(b"data: 1\n\n"))
        await asyncio.sleep(0.01)
        ex.close()

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                with pytest.raises(httpx.RemoteProtocolError, match="mid-body"):
                    await c.get(srv.url + "/")

    run(go())


def test_connection_refused_is_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused

        async def go() -> None:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                with pytest.raises(httpx.ConnectError):
                    await c.get(f"http://127.0.0.1:{port}/")

        run(go())


def test_garbage_response_is_remote_protocol_error() -> None:
    async def go() -> None:
        async with RawServer(serve(b"SPDY/9 banana\r\n\r\n")) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2)) as c:
                with pytest.raises(httpx.RemoteProtocolError):
                    await c.get(srv.url + "/")

    run(go())


def test_read_timeout_when_headers_never_come() -> None:
    async def script(ex: Exchange) -> None:
        await ex.client_gone()

    async def go() -> None:
        async with RawServer(script) as srv:
            async with httpx.AsyncClient(transport=FastTransport(2), timeout=httpx.Timeout(5, read=0.1)) as c:
                with pytest.raises(httpx.ReadTimeout):
                    await c.get(srv.url + "/")
            await srv.connections_ended()
            assert srv.books.closed_by_client == 1

    run(go())
