"""Small misbehaving HTTP/1.1 servers on 127.0.0.1 for the reliability tests (threads, raw sockets).

A `HostileServer` runs in background threads, so a test can replay against it in-process
(`asyncio.run`) or from a child process (`trajbench replay run --endpoint ...`). It answers
`GET /v1/models` and `GET /health` as a real server would and the replay's preflight request
(header `X-Trajbench-Preflight`) with a tiny valid stream (or `preflight(...)`, for tests of the
preflight itself); every other POST goes to the test's
`behave(conn, request, n)`, which writes bytes, stalls, closes or resets the socket. The server
keeps its books: turn requests received (preflight and GETs apart), connections accepted and
connections closed.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PREFLIGHT_HEADER = "x-trajbench-preflight"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Conn:
    """One accepted socket as a behaviour sees it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = b""
        self.gone = False

    def send(self, data: bytes) -> bool:
        """Write all of `data`; False once the client has gone away."""
        if self.gone:
            return False
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.gone = True
            return False

    def close(self) -> None:
        self.gone = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def reset(self) -> None:
        """Abort with an RST (SO_LINGER 0), as a crashed server or a middlebox would."""
        self.gone = True
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.sock.close()

    def client_gone(self, timeout: float) -> bool:
        """Wait until the client closes its end (EOF or error); True if it did within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except TimeoutError:
            return False
        except OSError:
            return True
        finally:
            if not self.gone:
                self.sock.settimeout(None)

    def read_request(self) -> Request | None:
        """The next request on this connection, or None at EOF."""
        try:
            while b"\r\n\r\n" not in self._buf:
                data = self.sock.recv(65536)
                if not data:
                    return None
                self._buf += data
            head, self._buf = self._buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
            }
            n = int(headers.get("content-length", "0"))
            while len(self._buf) < n:
                data = self.sock.recv(65536)
                if not data:
                    return None
                self._buf += data
            body, self._buf = self._buf[:n], self._buf[n:]
            return Request(method, path, headers, body)
        except OSError:
            return None


#: behave(conn, request, n) -> keep the connection for another request?
Behave = Callable[[Conn, Request, int], bool]


class HostileServer:
    """`with HostileServer(behave) as srv: srv.url`; `srv.requests` counts turn requests."""

    def __init__(
        self,
        behave: Behave,
        *,
        models: tuple[str, ...] | None = ("m",),
        health: dict[str, Any] | None = None,
        preflight: Behave | None = None,
        get: Behave | None = None,
    ) -> None:
        self.behave = behave
        self.preflight = preflight
        self.get = get  # answers every GET instead of the well-behaved routes
        self.models = models
        self.health = health if health is not None else {"status": "ok"}
        self.requests = 0
        self.preflights = 0
        self.connections = 0
        self.closed = 0  # connections this server has closed (a behaviour ended them, or the client)
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1024)
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._conns: list[Conn] = []
        self._thread = threading.Thread(target=self._accept, name="hostile-accept", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.close()  # gone ones too: a failed send leaves the socket open

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            conn = Conn(sock)
            with self._lock:
                self.connections += 1
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="hostile-conn", daemon=True).start()

    def _serve(self, conn: Conn) -> None:
        while not self._stop.is_set():
            req = conn.read_request()
            if req is None:
                break
            if req.method == "GET":
                keep = self.get(conn, req, 0) if self.get is not None else self._get(conn, req)
            elif PREFLIGHT_HEADER in req.headers:
                with self._lock:
                    self.preflights += 1
                keep = self.preflight(conn, req, 0) if self.preflight else conn.send(ok_stream("OK"))
            else:
                with self._lock:
                    self.requests += 1
                    n = self.requests
                keep = self.behave(conn, req, n)
            if not keep or conn.gone:
                break
        conn.close()
        with self._lock:
            self.closed += 1

    def _get(self, conn: Conn, req: Request) -> bool:
        if req.path.rstrip("/").endswith("/v1/models") and self.models is not None:
            return conn.send(
                json_response(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})
            )
        if req.path.rstrip("/").endswith("/health"):
            return conn.send(json_response(200, self.health))
        return conn.send(json_response(404, {"error": {"message": f"no route {req.path}"}}))


# ---- response pieces
def json_response(status: int, obj: object, extra_headers: bytes = b"") -> bytes:
    body = json.dumps(obj).encode()
    return b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        status,
        len(body),
        extra_headers,
        body,
    )


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def delta(text: str) -> bytes:
    return (
        b'data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}\n\n' % json.dumps(text).encode()
    )


FINISH = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
USAGE = b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n'
DONE = b"data: [DONE]\n\n"
END = b"0\r\n\r\n"


def ok_stream(*texts: str) -> bytes:
    return SSE_HEAD + b"".join(chunk(delta(t)) for t in texts) + chunk(FINISH) + chunk(USAGE) + chunk(DONE) + END


# ---- behaviours
def answer(conn: Conn, req: Request, n: int) -> bool:
    """A well-behaved keep-alive answer."""
    return conn.send(ok_stream("fine ", "answer"))


def reset_after(seconds: float, every: int = 1) -> Behave:
    """Answer normally, except every `every`-th turn request: read it, wait, then RST."""

    def behave(conn: Conn, req: Request, n: int) -> bool:
        if n % every:
            return answer(conn, req, n)
        time.sleep(seconds)
        conn.reset()
        return False

    return behave


def wait_gone(conn: Conn, limit: float = 30.0) -> bool:
    conn.client_gone(limit)
    return False
