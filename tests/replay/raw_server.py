"""A byte-level scriptable HTTP/1.1 server on 127.0.0.1 for transport and client fault tests.

It runs on the test's own event loop (fault tests time nothing). Each request is handed to
`script(exchange)`, an async function that writes raw bytes, sleeps, closes or resets — so a test
can send a malformed line, cut a stream mid-body or stall. The server keeps its books:
connections accepted, requests (head and body) and which connections the client closed.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class Request:
    head: bytes
    body: bytes

    @property
    def headers(self) -> dict[str, str]:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        return {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines if line)}

    @property
    def line(self) -> str:
        return self.head.decode("latin-1").split("\r\n", 1)[0]


class Exchange:
    """One request on one connection, as the script sees it."""

    def __init__(self, conn: _Conn, request: Request) -> None:
        self.conn = conn
        self.request = request

    def write(self, data: bytes) -> None:
        if not self.conn.transport.is_closing():
            self.conn.transport.write(data)

    def close(self) -> None:
        self.conn.server_closed = True
        self.conn.transport.close()

    def reset(self) -> None:
        """Abort with an RST (SO_LINGER 0), as a crashed server would."""
        self.conn.server_closed = True
        sock = self.conn.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.conn.transport.abort()

    async def client_gone(self, timeout: float = 5.0) -> bool:
        try:
            await asyncio.wait_for(self.conn.lost.wait(), timeout)
        except TimeoutError:
            return False
        return True


Script = Callable[[Exchange], Awaitable[None]]


@dataclass
class Books:
    connections: int = 0
    requests: list[Request] = field(default_factory=list)
    closed_by_client: int = 0


class _Conn(asyncio.Protocol):
    def __init__(self, server: RawServer) -> None:
        self.server = server
        self.buf = b""
        self.lost = asyncio.Event()
        self.server_closed = False
        self.transport: asyncio.Transport = None  # type: ignore[assignment]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.books.connections += 1
        self.server.conns.append(self)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, rest = self.buf.split(b"\r\n\r\n", 1)
            req = Request(head, b"")
            n = int(req.headers.get("content-length", "0"))
            if len(rest) < n:
                return
            req.body, self.buf = rest[:n], rest[n:]
            self.server.books.requests.append(req)
            self.server.tasks.append(asyncio.ensure_future(self.server.script(Exchange(self, req))))

    def connection_lost(self, exc: Exception | None) -> None:
        if not (self.server_closed or self.server.closing):
            self.server.books.closed_by_client += 1
        self.lost.set()


class RawServer:
    """`async with RawServer(script) as srv: srv.url`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.books = Books()
        self.tasks: list[asyncio.Future[None]] = []
        self.conns: list[_Conn] = []
        self.closing = False
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> RawServer:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Conn(self), "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def connections_ended(self, timeout: float = 30.0) -> None:
        """Wait until every connection so far has ended on the server's side (the client closed it
        or a script did), so the books say so: a wait on that, never on a guessed delay."""
        await asyncio.wait_for(asyncio.gather(*(c.lost.wait() for c in self.conns)), timeout)

    async def __aexit__(self, *exc: object) -> None:
        self.closing = True
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        assert self._server is not None
        self._server.close()


# ---- response pieces
def sse_head() -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def delta_event(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}\n\n' % text.encode()


FINISH_EVENT = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
USAGE_EVENT = b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n'
DONE_EVENT = b"data: [DONE]\n\n"
END = b"0\r\n\r\n"


def full_stream(*texts: str) -> bytes:
    return (
        sse_head()
        + b"".join(chunk(delta_event(t)) for t in texts)
        + chunk(FINISH_EVENT)
        + chunk(USAGE_EVENT)
        + chunk(DONE_EVENT)
        + END
    )


def plain(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    reason = {200: "OK", 429: "Too Many Requests", 500: "Internal Server Error"}.get(status, "X")
    return b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        status,
        reason.encode(),
        content_type.encode(),
        len(body),
        body,
    )
