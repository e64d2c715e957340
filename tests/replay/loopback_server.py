"""A small scriptable OpenAI-compatible streaming server on 127.0.0.1 for the scheduler's tests.

It runs in a background thread with its own event loop, so a test can drive a replay with
`asyncio.run` or in a subprocess while the server keeps its own books: every request's body and
headers, requests in flight per session and overall (the closed-loop invariants), completed
streams, and requests the client went away from (a cancelled timeout shows up here). It lists
its models (`GET /v1/models`) and answers the replay's preflight request (the
`X-Trajbench-Preflight` header) with a short stream, counted apart in `books.preflights`.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Reply:
    """How to answer one request."""

    chunks: int = 3
    chunk_delay: float = 0.0  # seconds before each chunk (the first one included)
    status: int = 200  # non-200: an error body instead of a stream
    stall: float = 0.0  # seconds to sleep before anything (a hung server)
    usage: bool = True
    completion_tokens: int | None = None  # the usage's output tokens (None: one per chunk); any value, a lie included
    # answer only once this holds (polled every 10 ms, for at most a minute): e.g. "every slot's
    # request has arrived", so a test sees them all in flight at once however slow the machine
    hold_until: Callable[[], bool] | None = None


@dataclass
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]
    t_arrive_ns: int
    raw: bytes = b""  # the request body exactly as it came over the wire
    t_done_ns: int | None = None
    disconnected: bool = False


@dataclass
class Books:
    requests: list[Seen] = field(default_factory=list)
    inflight: int = 0
    max_inflight: int = 0
    inflight_by_session: dict[str, int] = field(default_factory=dict)
    session_overlaps: int = 0
    completed: int = 0
    disconnected: int = 0
    preflights: list[Seen] = field(default_factory=list)


def session_of(headers: dict[str, str]) -> str:
    return headers.get("X-Session-ID", "")


class LoopbackServer:
    """`with LoopbackServer(plan) as srv: srv.base_url`; `plan(body, headers) -> Reply`."""

    def __init__(self, plan: Callable[[dict[str, Any], dict[str, str]], Reply] | None = None) -> None:
        self.plan = plan or (lambda body, headers: Reply())
        self.books = Books()
        self.lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="loopback-server", daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        # no name listed: it answers any model name, so a run sends the profile's (a server that
        # lists one model, not the profile's, gets that one: replay.engine.served)
        return web.json_response({"object": "list", "data": []})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw)
        headers = dict(request.headers)
        seen = Seen(body, headers, time.monotonic_ns(), raw)
        if "X-Trajbench-Preflight" in request.headers:
            with self.lock:
                self.books.preflights.append(seen)
            return await self._answer(request, Reply(chunks=1), seen, count=False)
        sid = session_of(headers)
        with self.lock:
            b = self.books
            b.requests.append(seen)
            b.inflight += 1
            b.max_inflight = max(b.max_inflight, b.inflight)
            b.inflight_by_session[sid] = b.inflight_by_session.get(sid, 0) + 1
            if sid and b.inflight_by_session[sid] > 1:
                b.session_overlaps += 1
        reply = self.plan(body, headers)
        try:
            return await self._answer(request, reply, seen)
        except (asyncio.CancelledError, ConnectionResetError):
            with self.lock:
                seen.disconnected = True
                self.books.disconnected += 1
            raise
        finally:
            with self.lock:
                self.books.inflight -= 1
                self.books.inflight_by_session[sid] -= 1

    async def _answer(self, request: web.Request, reply: Reply, seen: Seen, count: bool = True) -> web.StreamResponse:
        if reply.hold_until is not None:
            deadline = time.monotonic() + 60
            while not reply.hold_until() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        if reply.stall:
            await asyncio.sleep(reply.stall)
        if reply.status != 200:
            with self.lock:
                seen.t_done_ns = time.monotonic_ns()
            return web.json_response({"error": {"message": "scripted failure"}}, status=reply.status)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for k in range(reply.chunks):
            if reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
            await resp.write(_event({"choices": [{"index": 0, "delta": {"content": f"w{k} "}, "finish_reason": None}]}))
        final: dict[str, Any] = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        await resp.write(_event(final))
        if reply.usage:
            usage = {
                "prompt_tokens": 100,
                "completion_tokens": reply.chunks if reply.completion_tokens is None else reply.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": 40},
            }
            await resp.write(_event({"choices": [], "usage": usage}))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        with self.lock:
            seen.t_done_ns = time.monotonic_ns()
            self.books.completed += count
        return resp


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def write_traces(path: Any, trajectories: dict[str, list[float]]) -> Any:
    """A small valid dataset: one trajectory per id, one user turn per delay (user/assistant
    alternating), each with a system prompt so it can be salted."""
    lines = []
    for cid, delays in trajectories.items():
        turn = 1
        for k, delay in enumerate(delays):
            row: dict[str, Any] = {
                "conversation_id": cid,
                "turn": turn,
                "role": "user",
                "content": f"{cid} question {k}",
            }
            if k == 0:
                row["system"] = f"You are the assistant of {cid}."
            if delay:
                row["delay_seconds"] = delay
            lines.append(row)
            lines.append({"conversation_id": cid, "turn": turn + 1, "role": "assistant", "content": f"answer {k}"})
            turn += 2
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path
