"""The streaming chat client: one turn in, one `StreamResult` of raw facts out, faults as data.

A `StreamClient` is opened once per worker: an `httpx.AsyncClient` over `FastTransport` (or any
injected transport, e.g. `httpx.MockTransport` in tests) with a keep-alive pool sized to the
worker's slots and explicit timeouts. `stream_chat` posts a streaming chat completion and folds
the SSE body with `replay.client.sse.ChatStream`. Times are `time.monotonic_ns()` taken when bytes come
off the socket (the transport's `Timing`; with another transport, when the read reaches us).

Server and stream faults never raise: they become `error_kind` (one of `replay.results.records.ERROR_KINDS`)
and a message. Whether a fault fails the turn or leaves it partial follows the reference client
(docs/closed-loop.md): before the response head (no connection, a reset, a status other than
200, the timeout) the turn fails; once a 200 response has started, a broken stream, an error
object or a malformed line leaves a partial turn that keeps what arrived. The per-turn timeout is one deadline over the whole exchange (pool wait, connect,
write, headers, body), and it cancels the request by closing its connection, so the server sees
the client go away. Responses are size-capped (`ResponseLimits`): a server that never stops
sending fails the turn as `too_large` long before memory runs out. `asyncio.CancelledError`
propagates: the caller is shutting down.
The API key only ever lives in the `Authorization` header; it is never logged or stored.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx
import orjson

from ..errors import ReplayError
from .caps import DEFAULT_LIMITS, ResponseLimits, format_size
from .sse import ChatStream, error_text
from .transport import TIMING_EXTENSION, Body, ConnectionDropped, Connections, FastTransport, ResponseTooLarge, Timing

CHAT_PATH = "/v1/chat/completions"
_DRAIN_S = 2.0  # after [DONE], how long we wait for the body's end (keeps the socket reusable)
_ERROR_BODY_BYTES = 4096  # how much of a non-200 body goes into the error message
#: A body read for its text only (an error status, JSON instead of a stream) ends when nothing
#: more arrives for this long: a Content-Length longer than what the server sends must not hold
#: the slot until --turn-timeout.
_BODY_IDLE_S = 1.0


@dataclass(frozen=True)
class StreamResult:
    """What one streamed request produced; see the module docstring for the clock."""

    t_send_ns: int
    t_first_ns: int | None
    t_last_ns: int | None
    chunk_ns: tuple[int, ...]
    content: str
    reasoning: str
    tool_calls: tuple[dict[str, Any], ...]
    finish_reason: str | None
    usage: dict[str, Any] | None
    http_status: int | None
    error_kind: str | None
    error_message: str | None
    first_chars: int | None = None  # characters of the first chunk (its text and tool-call pieces)
    # (content, reasoning, tool calls) after the first chunk: what TPOT's denominator counts
    after_first: tuple[str, str | None, tuple[dict[str, Any], ...]] = ("", None, ())
    header_value: str | None = None  # the value of the client's `keep_header` in the response
    dropped_reasoning_chars: int = 0  # reasoning of deltas that also carried content (docs/metrics.md)

    @property
    def ok(self) -> bool:
        return self.error_kind is None


#: The connect timeout of sockets opened before the first request (seconds).
PREWARM_CONNECT_S = 2.0


def base_without_v1(base_url: str) -> str:
    """Users paste `http://host:8000/v1` as often as `http://host:8000`; both mean the same server."""
    base = base_url.rstrip("/")
    return base[:-3] if base.endswith("/v1") else base


class StreamClient:
    """Opened once per worker: an httpx.AsyncClient (fast transport underneath), pool sized to slots."""

    def __init__(
        self,
        base_url: str,
        *,
        max_connections: int,
        api_key: str | None,
        connect_timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: ResponseLimits = DEFAULT_LIMITS,
        keep_header: str | None = None,
    ) -> None:
        self.limits = limits
        self._keep_header = keep_header
        headers = {"Accept": "text/event-stream", "Accept-Encoding": "identity", "Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._transport = transport if transport is not None else FastTransport(max_connections, limits=limits)
        self._connect_timeout = connect_timeout
        self._http = httpx.AsyncClient(
            base_url=base_without_v1(base_url),
            transport=self._transport,
            # read/write are unbounded here: the per-turn timeout of stream_chat bounds the whole turn.
            timeout=httpx.Timeout(connect=connect_timeout, read=None, write=None, pool=None),
            headers=headers,
            trust_env=False,  # proxies from the environment would bypass the measured transport
        )
        # The endpoint resolved once, by httpx itself: a URL object skips re-parsing and re-joining
        # the path against base_url on every request (~40 µs of the client's CPU per turn).
        self._url = self._http.build_request("POST", CHAT_PATH).url
        # With our own transport, a request is encoded here, its fixed head once (the same
        # headers httpx would send), and handed straight to the pool: no httpx.Request or
        # Response objects per turn. Any other transport (tests) goes through httpx.
        self._fast: FastTransport | None = self._transport if isinstance(self._transport, FastTransport) else None
        fixed = self._http.build_request("POST", self._url, content=b"").headers
        self._head = b"".join(
            [b"POST ", self._url.raw_path, b" HTTP/1.1\r\n"]
            + [k + b": " + v + b"\r\n" for k, v in fixed.raw if k.lower() != b"content-length"]
        )
        self._fixed_names = {k.decode("latin-1").lower() for k, _ in fixed.raw} | {"content-length", "cookie"}

    def _take_cookies(self, resp: Body) -> None:
        """A response setting a cookie (a load balancer's affinity cookie): into httpx's jar, and
        from now on every request goes through httpx, which sends the jar's cookies back."""
        request = httpx.Request("POST", self._url)
        self._http.cookies.extract_cookies(httpx.Response(resp.status, headers=resp.headers, request=request))
        self._fast = None

    async def prewarm(self, n: int) -> int:
        """Open `n` sockets before the first request (FastTransport only; see its `prewarm`)."""
        if not isinstance(self._transport, FastTransport):
            return 0
        # a short cap: one lost SYN must not hold this worker back while the others are measured
        # (a socket not opened in time is counted, and its first turn connects itself)
        cap = PREWARM_CONNECT_S if self._connect_timeout is None else min(self._connect_timeout, PREWARM_CONNECT_S)
        return await self._transport.prewarm(self._url, n, connect_timeout=cap)

    def connections(self) -> Connections | None:
        """What the pool's sockets did (None with another transport)."""
        return self._transport.stats() if isinstance(self._transport, FastTransport) else None

    def __repr__(self) -> str:  # never show headers: they hold the key
        return f"StreamClient({str(self._http.base_url)!r})"

    async def __aenter__(self) -> StreamClient:
        await self._http.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._http.__aexit__(exc_type, exc, tb)

    async def stream_chat(
        self, body: dict[str, Any] | bytes, headers: dict[str, str], *, timeout_s: float
    ) -> StreamResult:
        """POST {base}/v1/chat/completions and fold the stream; faults become error_kind. `body`:
        the request object, or its JSON already encoded (a replay's `traces.BodyEncoder`)."""
        t_send = time.monotonic_ns()
        limits = self.limits
        state = ChatStream(limits.max_event_bytes)
        status: int | None = None
        kind: str | None = None
        message: str | None = None
        fast = self._fast
        kept: str | None = None
        if fast is not None and self._fixed_names.intersection(k.lower() for k in headers):
            fast = None  # a turn header replacing a default one: httpx merges them
        try:
            async with asyncio.timeout(timeout_s):
                if fast is not None:
                    resp = await fast.exchange(self._url, self._request(body, headers), self._connect_timeout, None)
                    try:
                        status, t_send = resp.status, resp.timing.t_send_ns
                        if self._keep_header is not None:
                            value = resp.header(self._keep_header.lower().encode("latin-1"))
                            kept = value.decode("latin-1") if value is not None else None
                        if resp.header(b"set-cookie") is not None:
                            self._take_cookies(resp)
                        kind, message = await _fold(
                            status, resp.header(b"content-type") or b"", resp, resp.timing, state, limits
                        )
                    finally:
                        await resp.aclose()
                else:
                    async with self._http.stream("POST", self._url, content=_encoded(body), headers=headers) as hresp:
                        status = hresp.status_code
                        if self._keep_header is not None:
                            kept = hresp.headers.get(self._keep_header)
                        timing = hresp.extensions.get(TIMING_EXTENSION)
                        if timing is not None:
                            t_send = timing.t_send_ns
                        ctype = hresp.headers.get("content-type", "").encode("latin-1")
                        kind, message = await _fold(status, ctype, _body_reads(hresp), timing, state, limits)
        except TimeoutError:
            if not state.done:  # else: the stream had ended ([DONE]), only the drain was cut
                kind, message = "timeout", f"no complete answer within {timeout_s:g} s; the request was cancelled"
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            kind, message = "connect", str(exc) or type(exc).__name__
        except httpx.TimeoutException as exc:
            kind, message = "timeout", str(exc) or type(exc).__name__
        except ResponseTooLarge as exc:
            kind, message = "too_large", str(exc)
        except (httpx.HTTPError, OSError) as exc:  # ConnectionDropped, a reset, bytes that are not HTTP
            kind, message = _broken(exc, status)
        state.settle(whole=kind is None)
        if kind is None or (kind == "stream" and state.error_kind is not None):
            kind, message = state.error_kind, state.error_message  # the fold's first fault came first
        elif kind == "stream" and status is not None and status != 200:
            kind = "http"  # a non-200 body that broke off: failed on its status all the same
        return StreamResult(
            t_send_ns=t_send,
            t_first_ns=state.t_first_ns,
            t_last_ns=state.t_last_ns if state.t_last_ns is not None else (time.monotonic_ns() if kind else None),
            chunk_ns=tuple(state.chunk_ns),
            content="".join(state.content),
            reasoning="".join(state.reasoning),
            tool_calls=state.tool_calls(),
            finish_reason=state.finish_reason,
            usage=state.usage,
            http_status=status,
            error_kind=kind,
            error_message=message,
            first_chars=state.first_chars,
            after_first=state.after_first(),
            header_value=kept,
            dropped_reasoning_chars=state.dropped_reasoning_chars,
        )

    def _request(self, body: dict[str, Any] | bytes, headers: dict[str, str]) -> bytes:
        """The whole HTTP/1.1 request: the fixed head, this turn's headers, the JSON body."""
        content = _encoded(body)
        extra = b"".join(_header_line(k, v) for k, v in headers.items())
        return b"%s%sContent-Length: %d\r\n\r\n%s" % (self._head, extra, len(content), content)


def _encoded(body: dict[str, Any] | bytes) -> bytes:
    return body if isinstance(body, bytes) else orjson.dumps(body)


def _broken(exc: BaseException, status: int | None) -> tuple[str, str]:
    """A connection that broke: before the response head the turn failed (`reset`, never
    resent); after it, the stream broke and the turn is partial (`stream`), as the reference
    completes it with what arrived."""
    if isinstance(exc, ConnectionDropped):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if status is None:
        return "reset", f"{text}; the request was not resent"
    return "stream", f"the stream broke after the response started ({text})"


def _header_line(name: str, value: str) -> bytes:
    line = f"{name}: {value}\r\n"
    if line.count("\n") != 1 or "\r" in line[:-2] or ":" in name:
        raise ReplayError(f"header {name!r} has a line break or colon in its name or value; it cannot be sent")
    return line.encode("ascii")


async def _fold(
    status: int, ctype: bytes, reads: Any, timing: Timing | None, state: ChatStream, limits: ResponseLimits
) -> tuple[str | None, str | None]:
    """Read one response into `state`; a non-stream answer becomes (error kind, message)."""
    if status != 200:
        return "http", f"HTTP {status}: {await _head_of_body(reads)}"
    if ctype.startswith(b"application/json"):
        return _json_instead_of_stream(await _read_capped(reads, limits.max_response_bytes))
    await _read_stream(reads, state, timing, limits.max_response_bytes)
    return None, None


async def _read_stream(raw: Any, state: ChatStream, timing: Timing | None, max_bytes: int) -> None:
    if timing is not None:
        # FastTransport: reads are folded inside the protocol's data_received (no task wake-up
        # per read); we wake once the fold has finished or the body has ended.
        timing.tap(state.feed)
        if not await timing.settled():
            state.close()
            state.t_last_ns = timing.last_arrival_ns or state.t_last_ns
            return
    else:  # another transport (tests, MockTransport): the total cap is counted here
        clock = time.monotonic_ns
        total = 0
        async for data in raw:
            total += len(data)
            if total > max_bytes:
                raise ResponseTooLarge(
                    f"the response exceeded {format_size(max_bytes)} (raise the cap with --max-response-mb)"
                )
            if state.feed(data, clock()):
                break
        else:
            state.close()
            return
    if state.error_kind == "too_large":
        return  # the connection is closed on exit; nothing after a broken cap is read
    try:  # [DONE] seen: read to the body's end for the last-byte time and a reusable socket
        async with asyncio.timeout(_DRAIN_S):
            async for _ in raw:
                pass
    except (TimeoutError, httpx.HTTPError):
        pass  # the answer is complete; the socket is simply not reused
    if timing is not None:
        state.t_last_ns = timing.last_arrival_ns
    else:
        state.t_last_ns = time.monotonic_ns()


async def _until_idle(reads: Any, idle_s: float = _BODY_IDLE_S) -> Any:
    """The reads of a body, ending early when none arrives for `idle_s` (the connection is then
    closed, not reused: its body never ended)."""
    it = reads.__aiter__()
    while True:
        try:
            async with asyncio.timeout(idle_s):
                data = await it.__anext__()
        except (StopAsyncIteration, TimeoutError):
            return
        yield data


async def _read_capped(reads: Any, max_bytes: int) -> bytes:
    got = bytearray()
    async for data in _until_idle(reads):
        got += data
        if len(got) > max_bytes:
            raise ResponseTooLarge(
                f"the response exceeded {format_size(max_bytes)} (raise the cap with --max-response-mb)"
            )
    return bytes(got)


def _body_reads(resp: httpx.Response) -> Any:
    """Each socket read as it came (raw); a body a transport already read (MockTransport) as one."""
    return resp.aiter_bytes() if resp.is_stream_consumed else resp.aiter_raw()


async def _head_of_body(reads: Any) -> str:
    got = bytearray()
    try:
        async for data in _until_idle(reads):
            got += data
            if len(got) >= _ERROR_BODY_BYTES:
                break
    except httpx.HTTPError:
        pass
    text = bytes(got[:_ERROR_BODY_BYTES]).decode("utf-8", "replace").strip()
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text or "(empty body)"
    return error_text(obj) if isinstance(obj, dict) else text


def _json_instead_of_stream(raw: bytes) -> tuple[str, str]:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and (obj.get("error") is not None or obj.get("object") == "error"):
        return "error_object", error_text(obj)
    return "malformed", "the server answered application/json, not an SSE stream; does it support stream: true?"
