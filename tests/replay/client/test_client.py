"""StreamClient: request shape (httpx.MockTransport) and faults as data (a real loopback server)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from raw_server import (
    DONE_EVENT,
    END,
    FINISH_EVENT,
    USAGE_EVENT,
    Exchange,
    RawServer,
    chunk,
    delta_event,
    full_stream,
    plain,
    sse_head,
)

from replay.client.stream import StreamClient, StreamResult
from replay.results.records import ERROR_KINDS

BODY = {
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}
KEY = "sk-test-secret-0123456789"


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


# ---- request shape, with httpx.MockTransport
def _mock_sse(seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = delta_event("Hi") + FINISH_EVENT + USAGE_EVENT + DONE_EVENT
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=body)

    return httpx.MockTransport(handler)


def test_request_shape_headers_body_and_auth(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[httpx.Request] = []

    async def go() -> StreamResult:
        async with StreamClient(
            "http://engine:8000/v1", max_connections=4, api_key=KEY, transport=_mock_sse(seen)
        ) as c:
            return await c.stream_chat(BODY, {"X-Session-ID": "traj-1:1"}, timeout_s=5)

    with caplog.at_level(logging.DEBUG):
        r = run(go())
    req = seen[0]
    assert (req.method, str(req.url)) == ("POST", "http://engine:8000/v1/chat/completions")
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["x-session-id"] == "traj-1:1"
    assert json.loads(req.content) == BODY
    assert (r.ok, r.content, r.finish_reason, r.usage, r.http_status) == (
        True,
        "Hi",
        "stop",
        {"prompt_tokens": 5, "completion_tokens": 2},
        200,
    )
    assert KEY not in caplog.text


def test_no_auth_header_without_a_key_and_key_not_in_repr() -> None:
    seen: list[httpx.Request] = []

    async def go() -> None:
        async with StreamClient("http://engine:8000", max_connections=1, api_key=None, transport=_mock_sse(seen)) as c:
            await c.stream_chat(BODY, {}, timeout_s=5)
        keyed = StreamClient("http://engine:8000", max_connections=1, api_key=KEY, transport=_mock_sse(seen))
        assert KEY not in repr(keyed)

    run(go())
    assert "authorization" not in seen[0].headers
    assert str(seen[0].url) == "http://engine:8000/v1/chat/completions"


def test_json_body_instead_of_a_stream_is_reported() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{"message": {"content": "x"}}]})

    async def go() -> StreamResult:
        async with StreamClient(
            "http://e", max_connections=1, api_key=None, transport=httpx.MockTransport(handler)
        ) as c:
            return await c.stream_chat(BODY, {}, timeout_s=5)

    r = run(go())
    assert r.error_kind == "malformed" and "stream: true" in (r.error_message or "")


# ---- faults, against a real loopback server
def _turn(script: Callable[[Exchange], Awaitable[None]], timeout_s: float = 5.0) -> tuple[StreamResult, RawServer]:
    async def go() -> tuple[StreamResult, RawServer]:
        async with RawServer(script) as srv:
            async with StreamClient(srv.url, max_connections=2, api_key=KEY) as c:
                r = await c.stream_chat(BODY, {"X-Session-ID": "s"}, timeout_s=timeout_s)
            await srv.connections_ended()  # the books are final once the server saw each close
            assert r.error_kind is None or r.error_kind in ERROR_KINDS  # the records contract
            return r, srv

    result: tuple[StreamResult, RawServer] = run(go())
    return result


def _writes(*parts: bytes, then: Callable[[Exchange], None] | None = None) -> Callable[[Exchange], Awaitable[None]]:
    async def script(ex: Exchange) -> None:
        for p in parts:
            ex.write(p)
            await asyncio.sleep(0.002)
        if then is not None:
            then(ex)

    return script


def test_success_over_the_fast_transport_has_ordered_times() -> None:
    r, srv = _turn(_writes(full_stream("Hel", "lo")))
    assert (r.ok, r.content, r.finish_reason, len(r.chunk_ns)) == (True, "Hello", "stop", 2)
    assert r.t_send_ns <= r.t_first_ns <= r.chunk_ns[-1] <= r.t_last_ns  # type: ignore[operator]
    assert srv.books.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_error_object_under_200_is_partial_and_the_stream_is_read_to_its_end() -> None:
    """The reference skips an error object and reads on: what follows it is kept, the turn is
    completed (partial), not failed."""
    err = b'data: {"error":{"message":"out of KV cache","code":503}}\n\n'
    r, _ = _turn(_writes(sse_head(), chunk(delta_event("a")), chunk(err), chunk(delta_event("b")), END))
    assert (r.error_kind, r.http_status, r.content) == ("error_object", 200, "ab")
    assert "out of KV cache" in (r.error_message or "")


def test_malformed_line_is_partial_and_skipped() -> None:
    r, _ = _turn(
        _writes(
            sse_head(),
            chunk(delta_event("a")),
            chunk(b"data: {oops\n\n"),
            chunk(delta_event("b")),
            chunk(DONE_EVENT),
            END,
        )
    )
    assert r.error_kind == "malformed" and "{oops" in (r.error_message or "") and r.content == "ab"


def test_close_mid_stream() -> None:
    r, _ = _turn(_writes(sse_head(), chunk(delta_event("a")), then=Exchange.close))
    assert r.error_kind == "stream" and r.content == "a" and r.t_first_ns is not None


def test_clean_end_without_done_or_finish_is_unterminated() -> None:
    r, _ = _turn(_writes(sse_head(), chunk(delta_event("a")), END))
    assert (r.error_kind, r.content) == ("unterminated", "a") and "finish_reason" in (r.error_message or "")


def test_choices_empty_then_done_is_empty() -> None:
    r, _ = _turn(_writes(sse_head(), chunk(b'data: {"choices":[]}\n\n'), chunk(DONE_EVENT), END))
    assert (r.error_kind, r.content, r.t_first_ns) == ("empty", "", None)


@pytest.mark.parametrize(
    "bad",
    [
        b'data: {"choices":{"index":0,"delta":{"content":"x"}}}\n\n',  # choices an object
        b'data: {"choices":[{"index":0,"delta":"x"}]}\n\n',  # delta a string
        b'data: {"choices":[{"index":0,"delta":{"content":7}}]}\n\n',  # content a number
        b'data: {"choices":["x"]}\n\n',  # a choice that is not an object
        b'data: {"choices":[{"delta":{"tool_calls":{"index":0}}}]}\n\n',  # tool_calls an object
    ],
)
def test_a_chunk_of_an_unexpected_shape_is_malformed_never_a_crash(bad: bytes) -> None:
    r, _ = _turn(
        _writes(sse_head(), chunk(delta_event("a")), chunk(bad), chunk(delta_event("b")), chunk(DONE_EVENT), END)
    )
    assert (r.error_kind, r.content) == ("malformed", "ab")


@pytest.mark.parametrize(
    "part",
    [
        {"index": 0, "function": {"name": "bash", "arguments": {"command": "ls"}}},  # arguments an object
        {"index": [0], "function": {"name": "bash", "arguments": "{}"}},  # index a list
        {"index": 0, "function": "bash"},  # function a string
    ],
)
def test_a_tool_call_the_reference_cannot_merge_fails_the_turn(part: dict[str, Any]) -> None:
    event = b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [part]}}]}).encode() + b"\n\n"
    r, _ = _turn(_writes(sse_head(), chunk(event), chunk(FINISH_EVENT), chunk(DONE_EVENT), END))
    assert r.error_kind == "tool_call" and "reference fails this turn" in (r.error_message or "")


@pytest.mark.parametrize("status", [500, 429])
def test_http_error_status(status: int) -> None:
    r, _ = _turn(_writes(plain(status, b'{"error":{"message":"busy","type":"overloaded"}}')))
    assert (r.error_kind, r.http_status) == ("http", status)
    assert r.error_message == f"HTTP {status}: busy (overloaded)"


def test_a_reset_after_the_response_started_is_a_broken_stream() -> None:
    """After the 200 head the reference completes the turn with what arrived: partial, not failed."""
    r, srv = _turn(_writes(sse_head(), chunk(delta_event("a")), then=Exchange.reset))
    assert (r.error_kind, r.content, r.http_status) == ("stream", "a", 200)
    assert "reset" in (r.error_message or "")
    assert len(srv.books.requests) == 1


def test_reset_before_any_response() -> None:
    r, srv = _turn(_writes(then=Exchange.reset))
    assert r.error_kind == "reset" and r.http_status is None
    assert len(srv.books.requests) == 1 and r.t_last_ns is not None  # failed, not retried; its time counts


def test_connection_refused() -> None:
    async def go() -> StreamResult:
        async with RawServer(_writes()) as srv:
            url = srv.url
        async with StreamClient(url, max_connections=1, api_key=None, connect_timeout=2) as c:
            return await c.stream_chat(BODY, {}, timeout_s=5)

    assert run(go()).error_kind == "connect"


def test_timeout_cancels_the_request_on_the_server() -> None:
    async def stall(ex: Exchange) -> None:
        ex.write(sse_head() + chunk(delta_event("a")))
        await ex.client_gone(timeout=10)

    r, srv = _turn(stall, timeout_s=1.0)  # the first chunk comes at once, on this same event loop
    assert r.error_kind == "timeout" and r.content == "a"
    assert srv.books.closed_by_client == 1  # the server saw the connection go away


def test_cancellation_propagates() -> None:
    async def stall(ex: Exchange) -> None:
        ex.write(sse_head())
        await ex.client_gone(timeout=10)

    async def go() -> None:
        async with RawServer(stall) as srv:
            async with StreamClient(srv.url, max_connections=1, api_key=None) as c:
                task = asyncio.ensure_future(c.stream_chat(BODY, {}, timeout_s=10))
                while not srv.books.requests:  # cancelled mid-request, not before it was sent
                    await asyncio.sleep(0.01)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            await srv.connections_ended()
            assert srv.books.closed_by_client == 1

    run(go())


def test_keep_alive_across_turns_and_done_drain() -> None:
    async def go() -> RawServer:
        async with RawServer(_writes(full_stream("x"))) as srv:
            async with StreamClient(srv.url, max_connections=2, api_key=None) as c:
                for _ in range(3):
                    assert (await c.stream_chat(BODY, {}, timeout_s=5)).ok
            return srv

    srv = run(go())
    assert (len(srv.books.requests), srv.books.connections) == (3, 1)


def test_a_cookie_the_server_sets_is_sent_back() -> None:
    """Cookie handling skips responses without Set-Cookie (a cost per turn), never the others."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = delta_event("Hi") + FINISH_EVENT + DONE_EVENT
        headers = {"Content-Type": "text/event-stream"}
        if len(seen) == 2:
            headers["Set-Cookie"] = "route=b7; Path=/"
        return httpx.Response(200, headers=headers, content=body)

    async def go() -> None:
        async with StreamClient(
            "http://e", max_connections=1, api_key=None, transport=httpx.MockTransport(handler)
        ) as c:
            for _ in range(3):
                assert (await c.stream_chat(BODY, {}, timeout_s=5)).ok

    run(go())
    assert [r.headers.get("cookie") for r in seen] == [None, None, "route=b7"]


def test_our_transport_sends_back_a_cookie_and_lets_a_turn_header_replace_a_default() -> None:
    """The request our client encodes itself (no httpx per turn) keeps httpx's behaviour: a
    load balancer's affinity cookie is sent back, a turn's header replaces a default one."""
    served = [0]

    async def script(ex: Exchange) -> None:
        served[0] += 1
        stream = full_stream("Hi")
        if served[0] == 2:
            stream = stream.replace(b"\r\n\r\n", b"\r\nSet-Cookie: route=b7; Path=/\r\n\r\n", 1)
        ex.write(stream)

    async def go() -> RawServer:
        async with RawServer(script) as srv:
            async with StreamClient(srv.url, max_connections=1, api_key=None) as c:
                for _ in range(3):
                    assert (await c.stream_chat(BODY, {"X-Session-ID": "s1"}, timeout_s=5)).ok
                assert (await c.stream_chat(BODY, {"Accept": "text/plain"}, timeout_s=5)).ok
            return srv

    srv = run(go())
    heads = [r.head.decode("latin-1").lower() for r in srv.books.requests]
    assert [h.count("cookie: route=b7") for h in heads] == [0, 0, 1, 1]
    assert heads[3].count("accept:") == 1 and "accept: text/plain" in heads[3]
    assert all(h.count("host:") == 1 and h.count("content-length:") == 1 for h in heads)


def _short_body(status: int, ctype: bytes, body: bytes) -> Callable[[Exchange], Awaitable[None]]:
    """A Content-Length 500 bytes longer than the body the server sends, the socket left open."""

    async def script(ex: Exchange) -> None:
        ex.write(
            b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (status, ctype, len(body) + 500, body)
        )
        await asyncio.sleep(30)

    return script


@pytest.mark.parametrize(
    ("status", "ctype", "body", "kind"),
    [
        (500, b"application/json", b'{"error": {"message": "boom"}}', "http"),
        (200, b"application/json", b'{"error": {"message": "no streams here"}}', "error_object"),
    ],
)
def test_a_content_length_longer_than_the_body_does_not_hold_the_slot(
    status: int, ctype: bytes, body: bytes, kind: str
) -> None:
    """The body is read for its text only: once nothing more arrives for a second the turn ends
    with what came (it used to wait for --turn-timeout and fail as a timeout)."""
    r, _ = _turn(_short_body(status, ctype, body), timeout_s=30)
    assert (r.error_kind, r.http_status) == (kind, status)
    assert "boom" in (r.error_message or "") or "no streams here" in (r.error_message or "")
    assert r.t_last_ns is not None and (r.t_last_ns - r.t_send_ns) / 1e9 < 15  # far from the 30 s timeout
