"""The floor: what a bare Python client on the same event loop pays to send a workload's requests
and read its streams, measured beside ours by `trajbench replay calibrate --compare floor`.

A bare protocol per connection, one slot per connection as a replay has: each turn writes the
body `replay run` would send for the stored turn (its messages encoded once before the window and
joined per turn inside it; cycles past the stored instances resend them unsalted, as the
agentic-bench driver does, so sizes differ by a salt's few bytes), stamps every read with
`time.monotonic_ns()` and keeps the bytes, and knows the answer has ended when the bytes read end
with the chunked body's last chunk (the calibration server always ends so). Nothing else: no
HTTP or SSE parsing, no records, no prompt rebuilding, salting or hashing. After the window the
kept reads are parsed (not counted) so the row's timing error is computed as every client's, and
an answer that is not a 200 counts as failed. Our client's CPU per turn minus the floor's is what
the harness itself costs; the kernel's share (reads, the ACKs they send, writes) is in both.

    python -m replay.calibrate.floor URL --concurrency 128 --turns 2048 --tokens 256
    python -m replay.calibrate.floor URL --concurrency 128 --sessions FILE --instances 256

`--sessions`: a file `replay.calibrate.workload.write_sessions` wrote. Prints one JSON object of
raw facts, the shape `replay.calibrate.run` reads from every client.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httptools
import orjson

from ..client import ChatStream, frozen_heap, run_loop
from .run import FIXED_BODY

_END = b"0\r\n\r\n"  # the chunked body's last chunk
_EMPTY = b'"messages":[]'
_TURN_TIMEOUT_S = 120.0  # as the other calibration clients wait for one answer


class _Floor(asyncio.Protocol):
    """Stamps and keeps every read of the exchange in flight; nothing more."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reads: list[tuple[int, bytes]] = []
        self.done: asyncio.Future[None] | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        reads = self.reads
        reads.append((time.monotonic_ns(), data))
        # the body's last chunk may span reads: then this one is shorter than it
        ended = data.endswith(_END) or (len(data) < len(_END) and b"".join(d for _, d in reads[-5:]).endswith(_END))
        if ended and self.done is not None and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.done is not None and not self.done.done():
            self.done.set_exception(ConnectionError(f"the server closed the connection{f' ({exc})' if exc else ''}"))


class _Session:
    """One stored instance's requests: each message encoded once (before the window); turn k's
    body is the first `counts[k]` of them joined into the fixed fields, in `request_body`'s key
    order (model, messages, tools, the rest)."""

    def __init__(self, params: dict[str, Any], tools: Any, turns: list[list[dict[str, Any]]]) -> None:
        fixed: dict[str, Any] = {"model": params.get("model"), "messages": []}
        if tools is not None:
            fixed["tools"] = tools
        fixed.update((k, v) for k, v in params.items() if k != "model")
        before, after = orjson.dumps(fixed).split(_EMPTY, 1)
        self.before, self.after = before + b'"messages":[', b"]" + after
        self.encoded = [orjson.dumps(m) for delta in turns for m in delta]
        self.counts = list(itertools.accumulate(len(delta) for delta in turns))

    def bodies(self) -> Iterator[bytes]:
        for n in self.counts:
            yield b"%s%s%s" % (self.before, b",".join(self.encoded[:n]), self.after)


def _instances(sessions: str | None, instances: int, turns: int, tokens: int) -> Iterator[Iterator[bytes]]:
    """Each instance's bodies, turn by turn (the fixed workload: instances of one two-word turn)."""
    if sessions is None:
        body = orjson.dumps(dict(FIXED_BODY, max_completion_tokens=tokens))
        return (iter((body,)) for _ in range(turns))
    with open(sessions, "rb") as f:
        params = orjson.loads(f.readline())["params"]
        stored = [_Session(params, s["tools"], s["turns"]) for s in map(orjson.loads, f)]
    return (stored[k % len(stored)].bodies() for k in range(instances))


async def _run(url: str, concurrency: int, instances: Iterator[Iterator[bytes]]) -> dict[str, Any]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        "Accept: text/event-stream\r\nX-Session-ID: cal\r\n"
    ).encode("ascii")
    loop = asyncio.get_running_loop()

    async def connect() -> _Floor:
        return (await loop.create_connection(_Floor, host, port))[1]

    conns = [await connect() for _ in range(concurrency)]
    turns: list[tuple[list[tuple[int, bytes]], bool]] = []
    failed = [0]

    async def slot(conn: _Floor) -> None:
        first = True
        for bodies in instances:
            for body in bodies:
                if conn.lost or conn.transport is None:  # closed after its last answer: a new socket
                    conn = await connect()
                    conns.append(conn)
                transport = conn.transport
                assert transport is not None  # set when the connection was made
                conn.reads = []
                conn.done = loop.create_future()
                transport.write(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
                try:
                    await asyncio.wait_for(conn.done, _TURN_TIMEOUT_S)
                except (ConnectionError, TimeoutError):
                    failed[0] += 1  # as a replay does: the instance ends, the slot goes on
                    if conn.transport is not None:
                        conn.transport.close()
                    conn.lost = True
                    break
                turns.append((conn.reads, first))
                first = False

    with frozen_heap():  # as a run's scheduler does, before its first request
        cpu0, wall0 = time.process_time(), time.monotonic_ns()
        await asyncio.gather(*(slot(c) for c in conns))
        cpu1, wall1 = time.process_time(), time.monotonic_ns()
    for c in conns:
        if c.transport is not None:
            c.transport.close()
    folded = [(_folded(reads), first) for reads, first in turns]
    return {
        "cpu_s": cpu1 - cpu0,
        "t_start_ns": wall0,
        "t_end_ns": wall1,
        "failed": failed[0] + sum(1 for f, _ in folded if f is None),
        "turns": [[*f, first] for f, first in folded if f is not None],
    }


class _Body:
    """httptools' callback for the body's pieces (the head is not needed)."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.on_body = self.pieces.append


def _folded(reads: list[tuple[int, bytes]]) -> tuple[list[int], str] | None:
    """(chunk arrival times, content) of one kept response, parsed after the window; None when
    the answer was not a 200."""
    body = _Body()
    parser = httptools.HttpResponseParser(body)
    stream = ChatStream()
    pieces = body.pieces
    for t_ns, data in reads:
        parser.feed_data(data)
        if pieces and stream.feed(b"".join(pieces), t_ns):
            break
        pieces.clear()
    if parser.get_status_code() != 200:
        return None
    return list(stream.chunk_ns), "".join(stream.content)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m replay.calibrate.floor", description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--turns", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--sessions", default=None)
    ap.add_argument("--instances", type=int, default=256)
    ap.add_argument("--loop", default=None, help="uvloop or asyncio (default: the one `replay run` uses)")
    a = ap.parse_args(argv)
    work = _instances(a.sessions, a.instances, a.turns, a.tokens)
    # a process entry point, like cli.py: the one place this process starts a loop
    print(orjson.dumps(run_loop(_run(a.url, a.concurrency, work), a.loop)).decode())


if __name__ == "__main__":
    main()
