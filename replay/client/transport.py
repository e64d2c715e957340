"""A fast HTTP/1.1 transport for httpx: an asyncio Protocol with the httptools C parser.

httpx's default transport (h11, pure Python) costs ~40 µs per chunked frame, 10–14 ms of client
CPU per 256-token streamed turn (measured by `trajbench replay calibrate`); that caps how much load one client
core can offer. `FastTransport` keeps httpx as the API (`httpx.AsyncClient(transport=...)`) and
does the socket work itself: one buffer per socket read, chunked decoding in C, a keep-alive
pool per host bounded by `max_connections`. Every body read is stamped with `time.monotonic_ns()`
in `data_received` — when the bytes come off the socket, not when the consumer gets to them —
and the stamp is exposed through the response extension `"trajbench.timing"` (a `Timing`).

The hot path: waking the reading task once per socket read costs more than parsing the read.
`Timing.tap(sink)` therefore hands every later body read (and any already queued) straight to
`sink(data, arrival_ns)` inside `data_received`; `Timing.settled()` wakes only when the sink
returns True (it has seen the end of the stream or an error), at the body's end, or on a fault.

Scope: HTTP/1.1 only (no pipelining, no upgrade), plain TCP or TLS; a response that must not
have a body (HEAD, 1xx, 204, 304) is not supported — the replay client never asks for one.
Closing a response before its end closes the connection, which is how a timed-out or cancelled
request is cancelled on the server.

A request is written at most once. A chat turn is not idempotent for a benchmark: the server
may have spent a prefill on it, and a silent resend would hide the failure and its time. So the
only retry is for a kept-alive socket the server had already closed before we wrote anything
(polled right before the write); a connection lost after that fails the request
(`ConnectionDropped`), and the caller records it.

That poll cannot see a close the server is about to make: a server drops an idle keep-alive
socket after its own timeout (5 s for llama.cpp's cpp-httplib, uvicorn and Node), and a request
written in that instant is lost. So a socket idle longer than `max_idle_s` (4 s, the reference
client's `max_idle_time`) is never reused: it is closed and the request goes on a fresh one.
Some servers close every connection right after a streamed response while still advertising
keep-alive (llama.cpp's cpp-httplib does: measured, the FIN follows the last chunk); a request
written before that FIN lands is lost the same way. Once the pool sees a server close a kept-alive
socket early (found closed before reuse, or dropped with no response after reuse), it stops
reusing that server's sockets (`keeps_alive`); the preflight learns it before the run starts.

`prewarm(url, n)` opens the pool's sockets before the first request, as the reference's load
generator does, so no measured turn pays for TCP (and TLS) set-up. It does nothing for a server
that does not keep sockets alive: each of its sockets serves one answer, so a warmed one would
only be spent on the first turn. Every socket the pool opens is counted (`stats()`): warmed,
failed to warm, opened for a request during the run, replaced after the server closed it, and
closed unused after idling too long.
"""

from __future__ import annotations

import asyncio
import functools
import select
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx

from .caps import DEFAULT_LIMITS, ResponseLimits
from .eventloop import current_loop
from .http1 import READ_SIZE, BufferedConnection, Connection, ConnectionDropped, ResponseTooLarge, Sink, Timing

__all__ = [
    "TIMING_EXTENSION",
    "Body",
    "ConnectionDropped",
    "FastTransport",
    "ResponseTooLarge",
    "Sink",
    "Timing",
]

TIMING_EXTENSION = "trajbench.timing"
MAX_IDLE_S = 4.0  # below the common 5 s server keep-alive timeout; the reference client's default


@dataclass(frozen=True)
class Connections:
    """What the connection pools' sockets did over a run, summed over workers (docs/files.md)."""

    prewarmed: int  # opened before the first request
    prewarm_failed: int  # could not be opened then (the turns that needed them connected themselves)
    opened_in_run: int  # opened for a request during the run: each such request paid TCP set-up
    reconnects: int  # kept-alive sockets found closed by the server before a write, replaced
    expired: int  # kept-alive sockets idle longer than max_idle_s, closed unused and replaced
    kept_alive: bool  # whether sockets were still reused at the end (False: one per request)

    def __add__(self, other: Connections) -> Connections:
        return Connections(
            self.prewarmed + other.prewarmed,
            self.prewarm_failed + other.prewarm_failed,
            self.opened_in_run + other.opened_in_run,
            self.reconnects + other.reconnects,
            self.expired + other.expired,
            self.kept_alive and other.kept_alive,
        )


class Body(httpx.AsyncByteStream):
    """One response: status and head, then each socket read of the body as it was received;
    `aclose()` gives the socket back to the pool (kept only after a whole, kept-alive answer)."""

    def __init__(self, pool: FastTransport, conn: Connection, read_timeout: float | None) -> None:
        self._pool = pool
        self._conn = conn
        self.status = conn.status
        self.headers = conn.headers
        self.timing = conn.timing
        self._read_timeout = read_timeout
        self._released = False

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (`name` in lower case), or None."""
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        timing = self.timing
        loop = asyncio.get_running_loop()
        while True:
            if conn.reads:
                t_ns, data = conn.take()
                timing.last_arrival_ns = t_ns
                yield data
                continue
            if conn.complete:
                return
            if conn.error is not None:
                raise conn.error
            conn.waiter = loop.create_future()
            if self._read_timeout is None:
                await conn.waiter
            else:
                try:
                    async with asyncio.timeout(self._read_timeout):
                        await conn.waiter
                except TimeoutError:
                    raise httpx.ReadTimeout(f"no bytes from the server for {self._read_timeout} s") from None
            conn.waiter = None

    async def aclose(self) -> None:
        if self._released:
            return
        self._released = True
        conn = self._conn
        keep = conn.complete and conn.keep_alive and not conn.closed and not conn.reads
        self._pool._release(conn, keep)


class FastTransport(httpx.AsyncBaseTransport):
    """httpx transport over asyncio + httptools; `max_connections` bounds open sockets, `limits`
    the size of each response, `max_idle_s` how long a kept-alive socket may wait for reuse."""

    def __init__(
        self,
        max_connections: int = 100,
        *,
        verify: bool | ssl.SSLContext = True,
        limits: ResponseLimits = DEFAULT_LIMITS,
        max_idle_s: float = MAX_IDLE_S,
        reuse: bool = True,
    ) -> None:
        self._max = max_connections
        self._limits = limits
        self._max_idle_ns = int(max_idle_s * 1e9)
        #: False once a server was seen closing kept-alive sockets early: then every request gets
        #: a fresh connection (or from the start, when the preflight found it)
        self.keeps_alive = reuse
        #: kept-alive sockets closed unused because they had idled longer than `max_idle_s`
        self.expired = 0
        #: kept-alive sockets found closed by the server before a request was written on them
        #: (replaced by a fresh connection; the request was never sent twice)
        self.reconnects = 0
        #: sockets opened before the first request (`prewarm`), and those that failed to open then
        self.prewarmed = 0
        self.prewarm_failed = 0
        #: sockets opened for a request (each such request paid for the connection set-up)
        self.opened = 0
        self._sem: asyncio.Semaphore | None = None
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None  # built on the first https request (loading CAs costs ms)
        self._closed = False
        # shared by this pool's connections on asyncio's own loop (see BufferedConnection)
        self._read_buffer: bytearray | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {request.url.scheme!r}", request=request)
        timeouts = request.extensions.get("timeout") or {}
        payload = await _encode(request)
        body = await self.exchange(
            request.url, payload, timeouts.get("connect"), timeouts.get("read"), timeouts.get("pool"), request
        )
        return httpx.Response(
            body.status,
            headers=body.headers,
            stream=body,
            extensions={"http_version": b"HTTP/1.1", TIMING_EXTENSION: body.timing},
        )

    async def exchange(
        self,
        url: httpx.URL,
        payload: bytes,
        connect_timeout: float | None,
        read_timeout: float | None,
        pool_timeout: float | None = None,
        request: httpx.Request | None = None,
    ) -> Body:
        """Write `payload` (a whole HTTP/1.1 request) to `url`'s server and wait for the response
        head; the `Body` streams the rest and returns the socket to the pool on `aclose()`.

        httpx's own request path (`handle_async_request`) comes through here too; the replay
        client calls it directly with a request it encoded itself, which saves httpx's per-request
        objects (~0.1 ms of client CPU a turn, measured by `trajbench replay calibrate`).
        """
        if self._closed:
            raise RuntimeError("FastTransport is closed")
        if self._sem is None:
            self._sem = asyncio.Semaphore(self._max)
        key = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        try:
            if pool_timeout is None:  # a replay's case: no timer to arm and cancel every turn
                await self._sem.acquire()
            else:
                async with asyncio.timeout(pool_timeout):
                    await self._sem.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no free connection in the pool", request=request) from None
        try:
            conn = await self._exchange(key, payload, connect_timeout, read_timeout, request)
        except BaseException:
            self._sem.release()
            raise
        return Body(self, conn, read_timeout)

    async def _exchange(
        self,
        key: tuple[str, str, int],
        payload: bytes,
        connect_timeout: float | None,
        read_timeout: float | None,
        request: httpx.Request | None,
    ) -> Connection:
        """Write the request on a live connection and wait for the response head.

        Never sends a request twice: a kept-alive socket found dead *before* anything is written
        is replaced silently (counted in `reconnects`); once a byte is written, whatever happens
        to the connection fails this request, since the server may already be working on it.
        """
        for _ in range(_MAX_STALE):
            conn = await self._connection(key, connect_timeout, request)
            # kept alive after an answer: only that tells whether the server keeps connections (a
            # socket warmed before the run and dropped tells nothing about keep-alive)
            reused = conn.exchanges > 0
            if conn.start(payload):
                break
            conn.close()  # closed between the pool's check and the write: nothing was sent
            self.reconnects += 1
        else:
            raise httpx.ConnectError(
                f"every new connection to {key[1]}:{key[2]} closed before the request could be written", request=request
            )
        try:
            try:
                async with asyncio.timeout(read_timeout):
                    await conn.headers_done  # type: ignore[misc]
            except TimeoutError:
                raise httpx.ReadTimeout(f"no response headers within {read_timeout} s", request=request) from None
        except BaseException as exc:
            conn.close()
            if reused and isinstance(exc, ConnectionDropped):
                self.keeps_alive = False  # it closed a kept-alive socket under us (see the module docstring)
            raise
        conn.exchanges += 1
        return conn

    async def _connection(
        self, key: tuple[str, str, int], connect_timeout: float | None, request: httpx.Request | None
    ) -> Connection:
        idle = self._idle.get(key)
        now = time.monotonic_ns()
        while idle:
            conn = idle.pop()
            if now - conn.idle_since_ns > self._max_idle_ns:
                conn.close()  # the server may be closing it right now (see the module docstring)
                self.expired += 1
                continue
            if _alive(conn):
                return conn
            conn.close()
            self.reconnects += 1
            if conn.exchanges:
                self.keeps_alive = False  # closed by the server sooner than max_idle_s
        _, host, port = key
        try:
            conn = await self._open(key, connect_timeout)
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"no connection to {host}:{port} within {connect_timeout} s", request=request
            ) from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}", request=request) from None
        self.opened += 1
        return conn

    async def _open(self, key: tuple[str, str, int], connect_timeout: float | None) -> Connection:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        if current_loop() == "uvloop":  # uvloop hands over just the bytes read (see Connection)
            make: Callable[[], Connection] = functools.partial(Connection, key, self._limits)
        else:
            if self._read_buffer is None:
                self._read_buffer = bytearray(READ_SIZE)
            make = functools.partial(BufferedConnection, key, self._read_buffer, self._limits)
        async with asyncio.timeout(connect_timeout):
            _, conn = await loop.create_connection(
                make,
                host,
                port,
                ssl=self._ssl_context() if scheme == "https" else None,
                server_hostname=host if scheme == "https" else None,
            )
        return conn

    async def prewarm(self, url: httpx.URL, n: int, *, connect_timeout: float | None = None) -> int:
        """Open up to `n` sockets to `url`'s server into the idle pool, all at once; returns how
        many opened. Nothing when the server does not keep sockets alive (see the module
        docstring) or the pool is in use. A socket that fails to open is counted, not raised:
        the turn that would have used it connects itself and records its own failure."""
        if not self.keeps_alive or self._closed or self._sem is not None:  # _sem: made by the first request
            return 0
        key = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        idle = self._idle.setdefault(key, [])
        want = max(0, min(n, self._max) - len(idle))
        results = await asyncio.gather(*(self._open(key, connect_timeout) for _ in range(want)), return_exceptions=True)
        now = time.monotonic_ns()
        opened = 0
        unexpected: BaseException | None = None
        for res in results:
            if isinstance(res, Connection):
                res.idle_since_ns = now
                idle.append(res)
                opened += 1
            elif isinstance(res, (OSError, TimeoutError)):
                self.prewarm_failed += 1
            else:
                unexpected = res
        self.prewarmed += opened
        if unexpected is not None:
            raise unexpected
        return opened

    def stats(self) -> Connections:
        return Connections(
            self.prewarmed, self.prewarm_failed, self.opened, self.reconnects, self.expired, self.keeps_alive
        )

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            v = self._verify
            self._ssl = v if isinstance(v, ssl.SSLContext) else (ssl.create_default_context() if v else _insecure())
        return self._ssl

    def _release(self, conn: Connection, keep: bool) -> None:
        if keep and self.keeps_alive and not self._closed:
            conn.waiter = None
            conn.idle_since_ns = time.monotonic_ns()
            self._idle.setdefault(conn.key, []).append(conn)
        else:
            conn.close()
        if self._sem is not None:
            self._sem.release()

    async def check_keep_alive(self, wait_s: float = 0.1) -> bool:
        """After a response: does the server keep its sockets open? Waits `wait_s` for a closing
        server's FIN, then polls the idle sockets (learning `keeps_alive`)."""
        await asyncio.sleep(wait_s)
        for conns in self._idle.values():
            for conn in conns:
                if not _alive(conn):
                    self.keeps_alive = False
        return self.keeps_alive

    async def aclose(self) -> None:
        self._closed = True
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


async def _encode(request: httpx.Request) -> bytes:
    """Request line, headers and body as one buffer: one write, one syscall for small requests."""
    body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
    chunked = any(k.lower() == b"transfer-encoding" and b"chunked" in v.lower() for k, v in request.headers.raw)
    if chunked:
        body = (b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)) if body else b"0\r\n\r\n"
    head = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        head += [name, b": ", value, b"\r\n"]
    head.append(b"\r\n")
    return b"".join(head) + body


def _alive(conn: Connection) -> bool:
    """Is an idle kept-alive socket still usable? Asked right before a request is written on it.

    asyncio may not have run the socket's close callback yet when the server's FIN (or RST)
    has already arrived, so the socket itself is polled: an idle socket must have nothing to
    read; EOF, an error or stray bytes all mean the server is done with it. Nothing has been
    written, so replacing it is safe.
    """
    transport = conn.transport
    if conn.closed or transport is None or transport.is_closing():
        return False
    if _poll is None:
        return True
    sock = transport.get_extra_info("socket")
    if sock is None:
        return True
    p = _poll()
    p.register(sock.fileno(), select.POLLIN | select.POLLPRI)
    return not p.poll(0)


_poll = getattr(select, "poll", None)  # not on Windows: there the asyncio flags are all we know
_MAX_STALE = 3  # fresh connections that may die before the write before we give up


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx
