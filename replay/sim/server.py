"""The simulator's HTTP face: an aiohttp app with the OpenAI routes, SSE streaming and faults.

Routes: POST /v1/chat/completions (streaming and not), GET /v1/models, GET /health, GET /metrics,
GET /version (as vLLM's: the engine's version, here trajbench's), POST /reset_prefix_cache (as
vLLM's: empties every replica's prefix cache, answers 200 without a body; `--flush-cache` calls it).
Every response says it is simulated: the `X-Simulated: trajbench-sim` header on every HTTP
response (errors and 404s included), `system_fingerprint: "trajbench-sim"` in chat responses and
the models list, /health's `simulated: true`. The replay's preflight request (its
`X-Trajbench-Preflight` header) is never faulted, never gamed (`--game`, games.py) and always
gets a synthetic answer, so oracle mode, fault injection and the audit games do not fail a run
before it starts. Per-request headers: the session header (routing), `X-Sim-Fault` (force a
fault, see faults.py) and `X-Sim-Timestamps: 1` (every chunk carries the server's
`time.monotonic_ns()` at write, for measuring client timing error on the same host).
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

import traces
from traces import TraceError

from . import lifeline, wire
from .answers import Answer, OracleAnswers, OracleMiss, Plan, SyntheticAnswers, plan
from .config import FINGERPRINT, PREFLIGHT_HEADER, SIM_HEADER, SimConfig
from .engine import Replica, SimRequest
from .errors import SimError
from .faults import FAULT_HEADER, UnknownFault, pick_fault
from .metrics import metrics_text
from .router import Router
from .tokens import Rendered, Tokens, make_tokenizer

TIMESTAMPS_HEADER = "X-Sim-Timestamps"
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json", headers=headers)


def _error(
    status: int, message: str, kind: str = "invalid_request_error", headers: dict[str, str] | None = None
) -> web.Response:
    return _json(wire.error_body(message, status, kind), status, headers)


@dataclass(frozen=True)
class _Turn:
    """One admitted request: its prompt, answer plan and replica, and the response's ids."""

    text: Rendered
    tokens: Tokens
    answer: Answer
    plan: Plan
    replica: Replica
    rid: str
    created: int
    model: str
    claimed: int = 0  # cached tokens a game claims beside the honest match (games.py)


class Simulator:
    """Holds the replicas, router, tokenizer and answer source of one simulated server."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.tokenizer = make_tokenizer(config.tokenizer, config.block_size)
        self.synthetic = SyntheticAnswers(config)
        self.oracle = OracleAnswers(config, self.tokenizer) if config.answers == "oracle" else None
        self.replicas = [Replica(i, config) for i in range(config.replicas)]
        self.router = Router(config.router, self.replicas, config.session_header)
        self.faults: Counter[str] = Counter()
        self._ids = itertools.count(1)
        # --game response-cache: every answer by its prompt's digest, kept across cache resets
        self.responses: dict[bytes, Answer] = {}

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/version", self.version)
        app.router.add_post("/reset_prefix_cache", self.reset_prefix_cache)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        app.on_response_prepare.append(_mark_simulated)
        return app

    async def _start(self, app: web.Application) -> None:
        for r in self.replicas:
            r.start()

    async def _stop(self, app: web.Application) -> None:
        for r in self.replicas:
            await r.stop()

    async def health(self, request: web.Request) -> web.Response:
        c = self.config
        return _json(
            {
                "status": "ok",
                "simulated": True,
                "system_fingerprint": FINGERPRINT,
                "model": c.model,
                "answers": c.answers,
                "replicas": c.replicas,
                "router": c.router,
                "tokenizer": self.tokenizer.name,
                "zero_latency": c.zero_latency,
                "game": c.game,
            }
        )

    async def version(self, request: web.Request) -> web.Response:
        return _json({"version": traces.__version__, "engine": FINGERPRINT})

    async def reset_prefix_cache(self, request: web.Request) -> web.Response:
        """Empty every replica's prefix cache, as vLLM's dev-mode route does (200, no body). A
        response cache (`--game response-cache`) is not a prefix cache: it survives, as it would."""
        for r in self.replicas:
            r.reset_cache()
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        card = {
            "id": self.config.model,
            "object": "model",
            "created": 0,
            "owned_by": FINGERPRINT,
            "root": self.config.model,
            "max_model_len": None,
            "simulated": True,
            "system_fingerprint": FINGERPRINT,
        }
        return _json({"object": "list", "data": [card], "system_fingerprint": FINGERPRINT})

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=metrics_text(self.replicas, self.faults), content_type="text/plain", charset="utf-8")

    async def chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as exc:
            return _error(400, f"request body is not JSON ({exc}); send an OpenAI chat-completions body")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return _error(400, "'messages' must be a non-empty list of message objects")
        tools = body.get("tools") or None
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            return _error(400, f"max_completion_tokens must be a positive integer, got {max_tokens!r}")
        try:
            rendered = self.tokenizer.render(messages, tools)
        except TraceError as exc:
            return _error(400, f"the chat template cannot render these messages: {exc}")
        text = rendered.text
        tokens = self.tokenizer.tokenize(text)
        preflight = PREFLIGHT_HEADER in request.headers
        try:
            fault = None if preflight else pick_fault(self.config, tokens.digest, request.headers.get(FAULT_HEADER))
        except UnknownFault as exc:
            return _error(400, str(exc))
        if fault:
            self.faults[fault] += 1
        if fault == "500":
            return _error(
                500, "simulated fault: internal server error (trajbench-sim --fail-kinds 500)", "server_error"
            )
        if fault == "429":
            return _error(
                429,
                "simulated fault: rate limited (trajbench-sim --fail-kinds 429)",
                "rate_limit_error",
                {"Retry-After": "1"},
            )
        if fault == "reset":
            _abort(request)
            raise asyncio.CancelledError  # aiohttp drops the connection without a response
        game = "none" if preflight else self.config.game
        kept = self.responses.get(tokens.digest) if game == "response-cache" else None
        try:
            if kept is not None:
                answer = kept
            elif self.oracle and not preflight:
                answer = self.oracle.answer(messages)
            else:
                answer = self.synthetic.answer(tokens, tools)
        except OracleMiss as exc:
            return _error(404, str(exc), "not_found_error")
        if game == "response-cache" and kept is None:
            self.responses[tokens.digest] = answer
        replica = self.router.pick(request.headers)
        turn = _Turn(
            rendered,
            tokens,
            answer,
            plan(answer, 1 if game == "truncate" else max_tokens),
            replica,
            f"chatcmpl-sim-{next(self._ids)}",
            int(time.time()),
            str(body.get("model") or self.config.model),
            self._claimed(replica, rendered.text, tokens, kept is not None) if game != "none" else 0,
        )
        if not body.get("stream"):
            return await self._complete(request, turn, fault)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        stamped = request.headers.get(TIMESTAMPS_HEADER, "").strip().lower() in ("1", "true", "yes")
        return await self._streamed(request, turn, fault, include_usage, stamped)

    def _claimed(self, replica: Replica, text: str, tokens: Tokens, answered_before: bool) -> int:
        """The cached tokens a game claims for a prompt beside the honest cache's match (games.py),
        in whole blocks and short of the last token, as the honest cache counts: all of a prompt
        answered before, or as much as its second cache holds once the ignored characters are gone."""
        block = self.config.block_size
        most = (tokens.count - 1) // block * block
        if answered_before:
            return most
        if replica.game_cache is None:
            return 0
        upto = replica.game_cache.match(text)
        replica.game_cache.insert(text)  # as the honest cache keeps a prompt once it is prefilled
        if upto <= 0:
            return 0
        return min(most, self.tokenizer.count(text[:upto]) // block * block)

    async def _complete(self, request: web.Request, turn: _Turn, fault: str | None) -> web.StreamResponse:
        """A non-streaming answer; stream faults map onto the body (error JSON, bad JSON, cut, hang)."""
        headers = {"X-Sim-Replica": str(turn.replica.index)}
        if fault == "error-object":
            return _json(
                wire.error_body(
                    "simulated fault: error object in a 200 response (trajbench-sim --fail-kinds error-object)",
                    500,
                    "server_error",
                ),
                200,
                headers,
            )
        if fault == "malformed":
            return web.Response(
                body=b'{"choices": [{"message": {"content": "trunc', content_type="application/json", headers=headers
            )
        if fault in ("midstream", "stall"):
            resp = web.StreamResponse(headers={**headers, "Content-Type": "application/json", "Content-Length": "4096"})
            await resp.prepare(request)
            await resp.write(b'{"id": "' + turn.rid.encode() + b'", "choices": [')
            if fault == "stall":
                await self._hold(request)
            _abort(request)
            return resp
        req = turn.replica.submit(turn.tokens.count, turn.tokens.blocks, turn.plan.n_steps, turn.claimed)
        try:
            while not req.done:
                await req.event.wait()
                req.event.clear()
        finally:
            turn.replica.cancel(req)
        self._cache_answer(turn)
        u = wire.usage(turn.tokens.count, turn.plan.n_steps, req.cached_tokens)
        return _json(wire.completion(turn.rid, turn.created, turn.model, turn.plan, u), headers=headers)

    async def _streamed(
        self, request: web.Request, turn: _Turn, fault: str | None, include_usage: bool, stamped: bool
    ) -> web.StreamResponse:
        framer = wire.Framer(turn.rid, turn.created, turn.model, stamped=stamped)
        resp = web.StreamResponse(headers={**SSE_HEADERS, "X-Sim-Replica": str(turn.replica.index)})
        await resp.prepare(request)
        if fault in ("error-object", "malformed", "stall"):
            return await self._bad_stream(request, resp, framer, fault)
        deltas = wire.step_deltas(turn.plan, [c.id for c in turn.answer.tool_calls])
        req = turn.replica.submit(turn.tokens.count, turn.tokens.blocks, len(deltas), turn.claimed)
        cut = max(1, len(deltas) // 2) if fault == "midstream" else None
        try:
            last = await self._stream(req, resp, deltas, framer, cut)
        except (ConnectionError, asyncio.CancelledError):
            turn.replica.cancel(req)
            raise
        if cut is not None:
            turn.replica.cancel(req)
            _abort(request)
            return resp
        self._cache_answer(turn)
        tail = framer.frames(last) + framer.finish(turn.plan.finish_reason)
        if include_usage:
            tail += framer.usage(wire.usage(turn.tokens.count, len(deltas), req.cached_tokens))
        await resp.write(tail + wire.DONE)
        await resp.write_eof()
        return resp

    async def _stream(
        self, req: SimRequest, resp: web.StreamResponse, deltas: list[bytes], framer: wire.Framer, cut: int | None
    ) -> list[bytes]:
        """Write each decode step's frames as the engine produces them (until `cut`, if set).

        Everything ready at a wake-up goes out in one write. Returns the last step's deltas
        unsent, so they go out with the finish frames, as a real server's last chunk does.
        """
        sent = 0
        pending = [wire.ROLE_DELTA]  # vLLM sends the role chunk with the first token
        limit = len(deltas) if cut is None else cut
        event = req.event
        while sent < limit:
            await event.wait()
            event.clear()
            upto = min(req.produced, limit)
            pending += deltas[sent:upto]
            sent = upto
            if sent < limit or cut is not None:
                await resp.write(framer.frames(pending))
                pending = []
        return pending

    def _cache_answer(self, turn: _Turn) -> None:
        """Insert prompt + the answer as the server renders it (docs/history-marker.md makes replay miss it)."""
        p = turn.plan
        full = self.tokenizer.with_answer(turn.text, p.content, p.reasoning, p.tool_calls)
        turn.replica.cache.insert(self.tokenizer.tokenize(full, prefix=turn.tokens).blocks)
        if turn.replica.game_cache is not None:
            turn.replica.game_cache.insert(full)

    async def _hold(self, request: web.Request) -> None:
        """Send nothing until --stall-seconds pass or the client hangs up."""
        deadline = time.monotonic() + self.config.stall_seconds
        while time.monotonic() < deadline and request.transport is not None and not request.transport.is_closing():
            await asyncio.sleep(0.05)

    async def _bad_stream(
        self, request: web.Request, resp: web.StreamResponse, framer: wire.Framer, fault: str
    ) -> web.StreamResponse:
        await resp.write(framer.frames([wire.ROLE_DELTA]))
        if fault == "error-object":
            await resp.write(
                framer.error(
                    "simulated fault: error object in a 200 stream (trajbench-sim --fail-kinds error-object)", 500
                )
                + wire.DONE
            )
        elif fault == "malformed":
            await resp.write(b'data: {"choices": [{"delta": {"content": "trunc\n\n' + wire.DONE)
        else:
            await self._hold(request)
            _abort(request)
            return resp
        await resp.write_eof()
        return resp


async def _backstop(app: web.Application) -> None:
    lifeline.backstop()


async def _mark_simulated(request: web.Request, response: web.StreamResponse) -> None:
    response.headers[SIM_HEADER] = FINGERPRINT


def _abort(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()


def serve(
    config: SimConfig, host: str = "127.0.0.1", port: int = 0, ready: Callable[[str], None] | None = None
) -> None:
    """Run the simulator until interrupted; `ready(base_url)` is called once it accepts requests.

    The socket is bound here (port 0 = a free port) so the URL is known exactly, race-free.
    SIGINT/SIGTERM shut it down gracefully, and never for longer than `lifeline.GRACE_S`.
    """
    app = Simulator(config).app()
    app.on_shutdown.append(_backstop)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        hint = (
            "pick another --port (0 = any free port) or stop the process that holds it"
            if exc.errno == errno.EADDRINUSE
            else "check --host and --port"
        )
        raise SimError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {hint}") from None
    url_host = f"[{host}]" if ":" in host else host
    base_url = f"http://{url_host}:{sock.getsockname()[1]}"
    # A short shutdown grace: a stalled or long stream must not hold the process for a minute.
    web.run_app(
        app,
        sock=sock,
        print=(lambda *_: ready(base_url)) if ready else None,
        access_log=None,
        backlog=1024,
        shutdown_timeout=1.0,
    )
