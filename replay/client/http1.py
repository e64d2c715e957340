"""One HTTP/1.1 client connection as an asyncio Protocol, parsed by httptools (C).

`Connection` owns a socket and parses one response at a time: headers resolve a future, body
reads are stamped with `time.monotonic_ns()` in `data_received` — when the bytes come off the
socket — and either queued as (arrival, bytes) for a reader or, once a `Timing.tap(sink)` is set,
handed straight to the sink so no task is woken per read. `replay.client.transport` pools these
connections behind the httpx transport interface.

A server is not trusted to be sane: the response head and the whole response are size-capped
(`ResponseLimits`), so an endless header block or body fails the exchange (`ResponseTooLarge`)
instead of growing memory until the turn's deadline. A connection the server drops while a
request is in flight (a reset at any point, or a close before any response byte) fails it with
`ConnectionDropped`; whether that request is retried is the pool's decision, never this module's.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

import httptools
import httpx

from .caps import DEFAULT_LIMITS, ResponseLimits, format_size

_HIGH_WATER = 1 << 20  # bytes queued unread before we stop reading the socket
READ_SIZE = 256 * 1024  # the most one socket read takes (asyncio's own default)
_monotonic_ns = time.monotonic_ns


Sink = Callable[[bytes, int], bool]


class ResponseTooLarge(httpx.TransportError):
    """The response exceeded a size cap of `ResponseLimits`; the connection is closed."""


class ConnectionDropped(httpx.RemoteProtocolError):
    """The server reset the connection, or closed it before any byte of the response."""


class Timing:
    """Clock facts of one exchange (request written, latest body read arrived) and the tap."""

    __slots__ = ("_conn", "last_arrival_ns", "t_send_ns")

    def __init__(self, conn: Connection) -> None:
        self.t_send_ns = 0
        self.last_arrival_ns = 0
        self._conn = conn

    def tap(self, sink: Sink) -> None:
        """Route body reads to `sink(data, arrival_ns)` from now on (then `await settled()`);
        reading the response stream afterwards just waits for the body's end."""
        conn = self._conn
        while conn.reads:
            t_ns, data = conn.take()
            self.last_arrival_ns = t_ns
            if not conn.sink_done and sink(data, t_ns):
                conn.sink_done = True
        conn.sink = sink

    async def settled(self) -> bool:
        """Wait until the sink returned True (→ True) or the body ended (→ False); faults raise."""
        conn = self._conn
        loop = asyncio.get_running_loop()
        while not conn.sink_done:
            if conn.complete:
                return False
            if conn.error is not None:
                raise conn.error
            conn.waiter = loop.create_future()
            await conn.waiter
            conn.waiter = None
        return True


class Connection(asyncio.Protocol):
    """One keep-alive socket; parses one response at a time into a queue of (arrival, bytes) or a tap.

    Reads arrive in `data_received`. On uvloop that is the cheapest way in: libuv reads every
    socket into one buffer of the loop's own and hands over a bytes object of just what was read,
    one Python call a read. asyncio's own loop would allocate a 256 KiB bytes object per read;
    there the pool makes a `BufferedConnection` instead.
    """

    def __init__(self, key: tuple[str, str, int], limits: ResponseLimits = DEFAULT_LIMITS) -> None:
        self.key = key
        self.limits = limits
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since_ns = 0  # set by the pool when the socket goes back to it
        self.exchanges = 0  # responses received on this socket (counted by the pool)
        # httptools calls on_body once per chunked frame: bind it straight to the list's append
        # (a C method, looked up once when each parser is made) instead of a Python method.
        self.pieces: list[bytes] = []
        self.on_body = self.pieces.append
        self._reset()

    def _reset(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done: asyncio.Future[None] | None = None
        self.head_seen = False  # the head has been parsed (checked on every read: a plain flag)
        self.reads: deque[tuple[int, bytes]] = deque()
        self.queued = 0
        self.pieces.clear()
        self.complete = False
        self.keep_alive = False
        self.received = 0  # bytes of this exchange's response so far (head and body)
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.until_close = False  # body delimited by connection close (no length, not chunked)
        self.paused = False
        self.sink: Sink | None = None
        self.sink_done = False
        self.timing = Timing(self)

    def start(self, payload: bytes) -> bool:
        """Begin one exchange: fresh parser state, then the request bytes, stamped right before
        they are written. False if the socket is already gone (a kept-alive one the server closed)."""
        self._reset()
        if self.closed or self.transport is None or self.transport.is_closing():
            return False
        self.headers_done = asyncio.get_running_loop().create_future()
        self.timing.t_send_ns = _monotonic_ns()
        self.transport.write(payload)
        return True

    # ---- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes | memoryview) -> None:
        now = _monotonic_ns()
        if self.error is not None:
            return  # failed and closing: nothing more is parsed or kept
        self.received += len(data)
        limits = self.limits
        if self.received > limits.max_response_bytes:
            self._abort(
                ResponseTooLarge(
                    f"the response exceeded {format_size(limits.max_response_bytes)} ({limits.response_hint})"
                )
            )
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._abort(httpx.RemoteProtocolError(f"invalid HTTP response from the server: {exc}"))
            return
        if self.received > limits.max_header_bytes and not self.head_seen:
            # httptools buffers an unfinished header line itself: checked after each read, the head
            # costs at most the cap plus one read before we give up on it.
            self._abort(
                ResponseTooLarge(
                    f"the response head (status line and headers) exceeded {format_size(limits.max_header_bytes)} "
                    "(raise the cap with --max-header-kb)"
                )
            )
            return
        if self.pieces:
            body = self.pieces[0] if len(self.pieces) == 1 else b"".join(self.pieces)
            self.pieces.clear()
            sink = self.sink
            if sink is not None:
                self.timing.last_arrival_ns = now
                if self.sink_done or not sink(body, now):
                    if not self.complete:
                        return  # nothing for the reading task to do yet: do not wake it
                else:
                    self.sink_done = True
            else:
                self.reads.append((now, body))
                self.queued += len(body)
                if self.queued > _HIGH_WATER and not self.paused and self.transport is not None:
                    self.paused = True
                    self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.error is None and exc is None and self.until_close and self.head_seen:
            self.complete = True
        elif not self.complete:
            if exc is not None:
                self._fail(ConnectionDropped(f"the server reset the connection ({exc})"))
            elif not self.head_seen:
                self._fail(ConnectionDropped("the server closed the connection without a response"))
            else:
                self._fail(httpx.RemoteProtocolError("the server closed the connection mid-body"))
        self._wake()

    # ---- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_seen = True
        self.status = self.parser.get_status_code()
        names = {k.lower() for k, _ in self.headers}
        self.until_close = b"content-length" not in names and b"transfer-encoding" not in names
        if self.headers_done is not None and not self.headers_done.done():
            self.headers_done.set_result(None)

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()  # only valid inside the callback

    # ---- helpers
    def _abort(self, exc: Exception) -> None:
        """Fail the exchange, drop what is queued and close the socket (it cannot be reused)."""
        self._fail(exc)
        self.reads.clear()
        self.queued = 0
        self.pieces.clear()
        self.close()
        self._wake()

    def _fail(self, exc: Exception) -> None:
        if self.error is None:
            self.error = exc
        if self.headers_done is not None and not self.headers_done.done():
            self.headers_done.set_exception(exc)
            self.headers_done.exception()  # mark retrieved: the caller may already be gone

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self) -> tuple[int, bytes]:
        item = self.reads.popleft()
        self.queued -= len(item[1])
        if self.paused and self.queued < _HIGH_WATER // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return item

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class BufferedConnection(Connection, asyncio.BufferedProtocol):
    """A `Connection` for asyncio's own event loop, which reads into `read_buffer` (`recv_into`)
    instead of `recv(256 KiB)`: that allocates and shrinks a 256 KiB bytes object per read (~12 µs
    on loopback TCP in a micro-benchmark, more than parsing a typical read). Connections of one
    pool may share the buffer: each read is parsed, its body bytes copied out by httptools, inside
    `buffer_updated`, before the loop reads any other socket."""

    def __init__(
        self, key: tuple[str, str, int], read_buffer: bytearray | None = None, limits: ResponseLimits = DEFAULT_LIMITS
    ) -> None:
        super().__init__(key, limits)
        self._view = memoryview(read_buffer if read_buffer is not None else bytearray(READ_SIZE))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._view[:nbytes])
