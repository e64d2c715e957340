"""Check the endpoint before the first turn, and find out whether it is trajbench's simulator.

A run against a dead endpoint, a misspelt model name, a missing API key or a server that does
not stream used to produce a folder of failed turns and exit 0. `preflight` asks first what
peer tools ask (the models list, then one tiny streamed request with the run's model and the
profile's parameters) and turns the first problem into a `PreflightError` that names the URL,
what came back and what to fix. The run folder is not touched before it passes. The models list
also settles the model name the run sends (`.served.choose_model`): without --model, the profile's
name if it is served, else the endpoint's only model; with several and none the profile's, the
run does not start and the error lists them.

It also learns whether the server keeps a socket open after a streamed answer (llama.cpp's
server closes it while advertising keep-alive): if not, the run opens a connection per request
instead of losing a turn to the race (`replay.client.transport`), and run.json says so.

`identify` never fails: it reads what the server says about itself (`GET /health`, the models
list, the simulator's `X-Simulated` response header), so a run against a standalone
`trajbench serve-sim` is recorded as simulated even when `--skip-preflight` skips the checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import httpx

import traces

from ..client import (
    CHAT_PATH,
    INFO_MAX_BYTES,
    BoundedReadError,
    BoundedResponse,
    FastTransport,
    ResponseLimits,
    StreamClient,
    StreamResult,
    aread_bounded,
    base_without_v1,
)
from ..errors import ReplayError
from ..sim import FINGERPRINT as SIMULATOR_FINGERPRINT
from ..sim import PREFLIGHT_HEADER
from ..sim import SIM_HEADER as SIMULATOR_HEADER
from .served import ModelChoice, ModelNotServed, choose_model

PREFLIGHT_TOKENS = 16  # enough for any server to start streaming; small enough to cost nothing
_GET_TIMEOUT_S = 10.0
_CHAT_TIMEOUT_S = 120.0  # a cold server may compile kernels on its first request; capped by --turn-timeout
_SKIP = "to start the run anyway, pass --skip-preflight"


class PreflightError(ReplayError):
    """The endpoint failed a check before the run; nothing was replayed."""


@dataclass(frozen=True)
class Target:
    """What the run is measuring, as recorded in run.json."""

    kind: str  # "real" or "simulated"
    evidence: str | None  # how the simulator was recognised (None for a real target)
    served_models: tuple[str, ...] | None = None  # GET /v1/models, when it answered
    checked: bool = False  # the preflight checks ran and passed
    keep_alive: bool | None = None  # does it keep a socket open after a streamed answer (None: not checked)
    model: ModelChoice | None = None  # the model name requests carry, settled from the served list (.served)


def _model_of(target: Target, asked: str | None, profile: traces.Profile, base: str, *, strict: bool) -> ModelChoice:
    """The model name settled from the served list (`choose_model`); the simulator answers any
    name, so against it the name is the one given or the profile's."""
    served = target.served_models if target.kind == "real" else None
    return choose_model(asked, profile.served_model_name, served, endpoint=base, strict=strict)


async def identify(
    base_url: str, *, api_key: str | None = None, profile: traces.Profile | None = None, model: str | None = None
) -> Target:
    """Is the server trajbench's simulator? Best effort: any failure means "real". With `profile`,
    the model name is settled too, without failing (`choose_model`, not strict)."""
    async with _http(base_url, api_key) as http:
        models = await _get_json(http, "/v1/models")
        health = await _get_json(http, "/health")
    target = _target(models, health, checked=False)
    if profile is None:
        return target
    return replace(target, model=_model_of(target, model, profile, base_without_v1(base_url), strict=False))


async def preflight(
    base_url: str,
    *,
    profile: traces.Profile,
    model: str | None,
    api_key: str | None,
    limits: ResponseLimits,
    turn_timeout: float,
) -> Target:
    """The checks; raises `PreflightError` on the first failure, else says what the target is.
    A server that echoes the API key in its answer does not get it printed: it is cut out."""
    try:
        return await _preflight(
            base_url, profile=profile, model=model, api_key=api_key, limits=limits, turn_timeout=turn_timeout
        )
    except PreflightError as exc:
        if api_key and api_key in str(exc):
            raise PreflightError(str(exc).replace(api_key, "[redacted]")) from None
        raise


async def _preflight(
    base_url: str,
    *,
    profile: traces.Profile,
    model: str | None,
    api_key: str | None,
    limits: ResponseLimits,
    turn_timeout: float,
) -> Target:
    base = base_without_v1(base_url)
    async with _http(base_url, api_key) as http:
        models = await _models(http, base)
        health = await _get_json(http, "/health")
    target = _target(models, health, checked=True)
    try:
        choice = _model_of(target, model, profile, base, strict=True)
    except ModelNotServed as exc:
        raise PreflightError(f"preflight: {exc}; {_SKIP}") from None
    target = replace(target, model=choice)
    name = choice.name
    body = traces.request_body(
        [{"role": "user", "content": "Reply with one word: ready."}],
        None,
        profile,
        model=name,
        max_completion_tokens=PREFLIGHT_TOKENS,
    )
    timeout_s = min(turn_timeout, _CHAT_TIMEOUT_S)
    transport = FastTransport(1, limits=limits)
    async with StreamClient(base_url, max_connections=1, api_key=api_key, limits=limits, transport=transport) as client:
        result = await client.stream_chat(body, {PREFLIGHT_HEADER: "1"}, timeout_s=timeout_s)
        keep_alive = await transport.check_keep_alive() if result.ok else None
    if not result.ok:
        raise PreflightError(
            f"preflight: POST {base}{CHAT_PATH} (model {name!r}, {PREFLIGHT_TOKENS} tokens) failed: "
            f"{result.error_kind}: {result.error_message}; {_chat_hint(result, name, target, timeout_s)}; {_SKIP}"
        )
    return replace(target, keep_alive=keep_alive)


def _http(base_url: str, api_key: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.AsyncClient(
        base_url=base_without_v1(base_url), headers=headers, timeout=_GET_TIMEOUT_S, trust_env=False
    )


async def _get(http: httpx.AsyncClient, path: str) -> BoundedResponse:
    """GET `path`, its body capped and the whole exchange within the GET timeout."""
    return await aread_bounded(http, "GET", path, max_bytes=INFO_MAX_BYTES, deadline_s=_GET_TIMEOUT_S)


async def _models(http: httpx.AsyncClient, base: str) -> BoundedResponse | None:
    """GET /v1/models: unreachable or refused fails the run; a server without the route does not."""
    url = f"{base}/v1/models"
    try:
        resp = await _get(http, "/v1/models")
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise PreflightError(
            f"preflight: cannot connect to {url}: {exc}; is the server up and listening there? check --endpoint; {_SKIP}"
        ) from None
    except httpx.TimeoutException:
        raise PreflightError(
            f"preflight: GET {url} gave no answer within {_GET_TIMEOUT_S:g} s; is the server overloaded or still starting? {_SKIP}"
        ) from None
    except httpx.HTTPError as exc:
        raise PreflightError(
            f"preflight: GET {url} failed ({type(exc).__name__}: {exc}); is --endpoint the base URL of an HTTP server? {_SKIP}"
        ) from None
    except BoundedReadError as exc:
        raise PreflightError(f"preflight: {exc}; is --endpoint an OpenAI-compatible server? {_SKIP}") from None
    if resp.status_code in (401, 403):
        raise PreflightError(
            f"preflight: GET {url} was refused (HTTP {resp.status_code}: {_text(resp)}); the API key is missing or wrong: "
            "put it in the environment variable named by --api-key-env (default OPENAI_API_KEY)"
        )
    return resp


async def _get_json(http: httpx.AsyncClient, path: str) -> BoundedResponse | None:
    try:
        return await _get(http, path)
    except (httpx.HTTPError, BoundedReadError):
        return None


def _json(resp: BoundedResponse | None) -> Any:
    if resp is None or resp.status_code != 200:
        return None
    try:
        return resp.json()
    except ValueError:  # not JSON, or nested deeper than the parser's limit
        return None


def _target(models: BoundedResponse | None, health: BoundedResponse | None, *, checked: bool) -> Target:
    listed = _json(models)
    data = listed.get("data") if isinstance(listed, dict) else None
    served = tuple(str(m["id"]) for m in data if isinstance(m, dict) and "id" in m) if isinstance(data, list) else None
    evidence: list[str] = []
    h = _json(health)
    if isinstance(h, dict) and (h.get("simulated") is True or h.get("system_fingerprint") == SIMULATOR_FINGERPRINT):
        evidence.append("GET /health says simulated")
    if isinstance(listed, dict) and (
        listed.get("system_fingerprint") == SIMULATOR_FINGERPRINT
        or any(
            isinstance(m, dict) and (m.get("simulated") is True or m.get("owned_by") == SIMULATOR_FINGERPRINT)
            for m in data or ()
        )
    ):
        evidence.append("GET /v1/models says simulated")
    for path, resp in (("/health", health), ("/v1/models", models)):
        if resp is not None and SIMULATOR_HEADER in resp.headers:
            evidence.append(f"{SIMULATOR_HEADER} header on GET {path}")
            break
    if evidence:
        return Target("simulated", "; ".join(evidence), served, checked)
    return Target("real", None, served, checked)


def _chat_hint(r: StreamResult, model: str, target: Target, timeout_s: float) -> str:
    served = target.served_models if target.kind == "real" else None  # the simulator answers any name
    listed = f" (it lists: {', '.join(served[:10])}{' …' if len(served) > 10 else ''})" if served else ""
    if r.error_kind == "connect":
        return "is the server up and listening there? check --endpoint"
    if r.error_kind == "timeout":
        return f"no complete answer within {timeout_s:g} s; is the server still loading the model, or stuck?"
    if r.error_kind == "http":
        status = r.http_status or 0
        if status in (401, 403):
            return "the API key is missing or wrong: put it in the environment variable named by --api-key-env (default OPENAI_API_KEY)"
        if served is not None and model not in served:
            return f"the server does not serve model {model!r}{listed}; pass --model NAME"
        if status == 404:
            return f"is --endpoint the server's base URL (it must answer POST {CHAT_PATH}) and is {model!r} served there{listed}? pass --model NAME"
        if status in (400, 422):
            return "the server rejected the request: does it accept the profile's sampling parameters (see `trajbench profiles`) and this model? check --profile and --model"
        return "the server is failing or overloaded; check its logs"
    if r.error_kind == "reset":
        return "the server dropped the connection; check its logs"
    if r.error_kind == "too_large":
        return "the answer broke a size cap; raise it with the option the message names if the server is right"
    if r.error_kind == "error_object":
        return "the server streamed an error object; check its logs"
    if r.error_kind == "stream":
        return "the server broke off its answer mid-stream; check its logs"
    if r.error_kind == "unterminated":
        return "the answer ended without [DONE] or a finish_reason; is a proxy cutting streams short?"
    if r.error_kind == "empty":
        return "the server streamed no output at all (no text, no tool call, no finish reason); check its logs"
    if r.error_kind == "tool_call":
        return "the server streamed a tool call of a shape no client can assemble; check its tool-call parser"
    return "the answer is not an OpenAI chat-completions SSE stream; does the server support stream: true?"


def _text(resp: BoundedResponse) -> str:
    text = resp.text.strip()
    return (text[:200] + "…") if len(text) > 200 else (text or "(empty body)")
