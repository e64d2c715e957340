"""A zero-latency streaming chat server for calibrating the harness (run in its own process).

It answers every `POST …/chat/completions` with a chunked SSE stream of content chunks — `tokens`
on average: request n gets a length spread deterministically over tokens·(1 ± spread), because
equal lengths keep all streams in lockstep, so every turn would start and end in one burst of
per-turn client work that delays the chunks around it — then a finish chunk, a usage chunk and
`[DONE]`. Frames are pre-encoded; each content chunk
carries, as its text, the server's `time.monotonic_ns()` taken right before the frame is written
(fixed width, so the frame is a constant prefix + stamp + suffix). On one host the monotonic clock
is shared between processes, so client arrival − server send is the harness's own timing error.

One ticker drives all open streams like a batched decode step: each tick writes the next frame
of every stream, then yields to the loop (and, when pacing, sleeps until the next tick, ticks
`interval_s` apart whatever the writes cost). Zero latency
(`interval_s=0`) saturates the client; a pacing interval (and a time to first token, `ttft_s`)
streams like an engine: every chunk in its own socket read.

    python -m replay.calibrate.server --tokens 256 [--interval-ms 0] [--ttft-ms 0] [--port 0]
prints `PORT <n>` once listening and serves until killed; more processes started with
`--port <n>` share the port (SO_REUSEPORT), so the server need not be the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
from collections.abc import Callable

import httptools

STAMP_DIGITS = 20
_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
_NOT_FOUND_BODY = b'{"error":{"message":"not found","code":404}}'
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(_NOT_FOUND_BODY),
    _NOT_FOUND_BODY,
)


def _frame(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(obj_json: bytes) -> bytes:
    return b"data: " + obj_json + b"\n\n"


_ID = b'"id":"cal","object":"chat.completion.chunk","model":"cal"'
_PRE = b"data: {" + _ID + b',"choices":[{"index":0,"delta":{"content":"'
_POST = b' "},"finish_reason":null}]}\n\n'
_CHUNK_LEN = len(_PRE) + STAMP_DIGITS + len(_POST)
FRAME_PREFIX = b"%x\r\n" % _CHUNK_LEN + _PRE
FRAME_SUFFIX = _POST + b"\r\n"


def _tail(tokens: int) -> bytes:
    finish = _event(b"{" + _ID + b',"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}')
    usage = _event(
        b"{"
        + _ID
        + b',"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d}}' % (tokens, tokens + 1)
    )
    return _frame(finish) + _frame(usage) + _frame(b"data: [DONE]\n\n") + b"0\r\n\r\n"


class _Stream:
    __slots__ = ("first_ns", "left", "tail", "transport")

    def __init__(self, transport: asyncio.Transport, tokens: int, tail: bytes, first_ns: int) -> None:
        self.transport = transport
        self.left = tokens
        self.tail = tail
        self.first_ns = first_ns  # no chunk before this (the request's arrival + the TTFT)


class CalServer:
    """The ticker and the set of open streams; one per process."""

    def __init__(self, tokens: int, interval_s: float, spread: float = 0.5, ttft_s: float = 0.0) -> None:
        self.lo = max(1, round(tokens * (1 - spread)))
        self.span = max(1, 2 * tokens - 2 * self.lo + 1)  # lengths lo … 2·tokens − lo: mean = tokens
        self.interval_s = interval_s
        self.ttft_ns = int(ttft_s * 1e9)
        self.tails: dict[int, bytes] = {}
        self.served = 0
        self.streams: list[_Stream] = []
        self.wake = asyncio.Event()

    def start(self, transport: asyncio.Transport) -> None:
        n = self.lo + (self.served * 7919) % self.span  # a fixed stride: spread, deterministic
        self.served += 1
        tail = self.tails.get(n) or self.tails.setdefault(n, _tail(n))
        transport.write(_HEAD)
        self.streams.append(_Stream(transport, n, tail, time.monotonic_ns() + self.ttft_ns))
        self.wake.set()

    async def tick_forever(self) -> None:
        clock = time.monotonic_ns
        pre, post = FRAME_PREFIX, FRAME_SUFFIX
        interval_ns = int(self.interval_s * 1e9)
        next_tick = clock()
        while True:
            if not self.streams:
                self.wake.clear()
                await self.wake.wait()
                next_tick = clock()
            live: list[_Stream] = []
            now = clock()
            for s in self.streams:
                t = s.transport
                if t.is_closing():
                    continue
                if s.first_ns > now:  # still "prefilling"
                    live.append(s)
                    continue
                t.write(pre + b"%020d" % clock() + post)
                s.left -= 1
                if s.left > 0:
                    live.append(s)
                else:
                    t.write(s.tail)
            self.streams = live
            # ticks on a fixed schedule, as a decode step is: sleeping the interval after the
            # writes stretched every tick by their cost (7.2 ms instead of 5 at 128 streams)
            # (a tick that is already late starts now: no burst of catch-up ticks)
            now = clock()
            next_tick = max(next_tick + interval_ns, now)
            await asyncio.sleep(max(0, next_tick - now) / 1e9)


class _Handler(asyncio.Protocol):
    def __init__(self, server: CalServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            assert self.transport is not None
            self.transport.close()

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_message_complete(self) -> None:
        assert self.transport is not None
        if self.url.endswith(b"/chat/completions"):
            self.server.start(self.transport)
        else:
            self.transport.write(_NOT_FOUND)
        self.url = b""


async def serve(
    tokens: int,
    interval_s: float,
    host: str = "127.0.0.1",
    port: int = 0,
    spread: float = 0.5,
    ready: Callable[[str], object] = print,
    ttft_s: float = 0.0,
) -> None:
    loop = asyncio.get_running_loop()
    server = CalServer(tokens, interval_s, spread, ttft_s)
    # reuse_port: several server processes may share one port (the kernel spreads connections)
    srv = await loop.create_server(
        lambda: _Handler(server), host, port, backlog=1024, reuse_address=True, reuse_port=True
    )
    sock = srv.sockets[0]
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ready(f"PORT {sock.getsockname()[1]}")
    await server.tick_forever()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m replay.calibrate.server", description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--interval-ms", type=float, default=0.0)
    ap.add_argument("--ttft-ms", type=float, default=0.0, help="no chunk of a stream before its request + this")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--spread", type=float, default=0.5, help="answer lengths over tokens·(1 ± spread)")
    a = ap.parse_args(argv)
    try:  # a process entry point, like cli.py: the one place this process starts a loop
        asyncio.run(
            serve(
                a.tokens,
                a.interval_ms / 1000.0,
                port=a.port,
                spread=a.spread,
                ready=lambda s: print(s, flush=True),
                ttft_s=a.ttft_ms / 1000.0,
            )
        )
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
