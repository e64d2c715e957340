"""`--flush-cache`: empty the engine's prefix cache before a run, so the run starts cold
(docs/audits.md, the warm-cache audit).

The salts are the same in every run, so a server that served an earlier run (or an earlier
point of a sweep) still holds its prompts and hands them back as cached: the run looks faster
than a cold one. Each engine resets its cache its own way:

| engine | request | note |
|---|---|---|
| vLLM | `POST /reset_prefix_cache` | served only when the server runs with `VLLM_SERVER_DEV_MODE=1`; answers 200 without a body |
| SGLang | `POST /flush_cache` | answers 400 while requests are running or waiting |
| trajbench's simulator | `POST /reset_prefix_cache` | as vLLM |
| llama.cpp | none | refused |

An engine whose kind is unknown is asked both routes in turn. A reset the engine refuses, or
does not serve, stops the run before it starts, with the engine and what it lacks named: a run
asked to start cold never starts warm silently. The answer is recorded in run.json.
"""

from __future__ import annotations

import time

import httpx

from ..errors import ReplayError
from ..results import CacheFlush, EngineIdentity
from .identity import client, read_body

#: The reset route of each engine kind (`EngineIdentity.engine`); an unknown kind tries them all.
RESET_ROUTES = {
    "vllm": ("/reset_prefix_cache",),
    "trajbench-sim": ("/reset_prefix_cache",),
    "sglang": ("/flush_cache",),
}
_ANY = ("/reset_prefix_cache", "/flush_cache")
_ANSWER_CHARS = 200
_BODY_CAP = 64 << 10
_HOW = "docs/audits.md"


class FlushRefused(ReplayError):
    """The engine has no prefix-cache reset, or refused it; nothing was replayed."""


def _who(identity: EngineIdentity) -> str:
    name = identity.engine if identity.engine != "unknown" else "the engine (of unknown kind)"
    return f"{name} {identity.version}" if identity.version else name


def _hint(identity: EngineIdentity, statuses: list[int | None]) -> str:
    if identity.engine == "vllm" and 404 in statuses:
        return (
            "vLLM serves POST /reset_prefix_cache only when started with VLLM_SERVER_DEV_MODE=1: restart it so, "
            f"or drop --flush-cache and restart the server before each point ({_HOW})"
        )
    if identity.engine == "sglang" and 400 in statuses:
        return f"SGLang flushes only when no request is running or waiting: let the server go idle and rerun ({_HOW})"
    return f"drop --flush-cache and restart the server before each point instead ({_HOW})"


def flush_prefix_cache(base_url: str, identity: EngineIdentity, *, api_key: str | None = None) -> CacheFlush:
    """Reset the engine's prefix cache (blocking; a run calls it in a thread); raises
    `FlushRefused` when the engine has no reset or refuses it."""
    if identity.engine == "llama.cpp":
        raise FlushRefused(
            f"--flush-cache: {_who(identity)} has no prefix-cache reset to call; "
            f"drop --flush-cache and restart the server before each point instead ({_HOW})"
        )
    tried: list[str] = []
    statuses: list[int | None] = []
    with client(base_url, api_key) as http:
        for route in RESET_ROUTES.get(identity.engine, _ANY):
            t0 = time.monotonic()
            try:
                with http.stream("POST", route) as resp:
                    status = resp.status_code
                    body = read_body(resp, _BODY_CAP)
            except httpx.HTTPError as exc:
                tried.append(f"POST {route} failed ({type(exc).__name__}: {exc})")
                statuses.append(None)
                continue
            text = "(a body over 64 KiB)" if body is None else body.decode("utf-8", "replace").strip()
            answer = "".join(c for c in text if c.isprintable() or c == "\n")[:_ANSWER_CHARS]
            if status == 200:
                return CacheFlush(f"POST {route}", identity.engine, status, answer, round(time.monotonic() - t0, 3))
            tried.append(f"POST {route} answered HTTP {status}" + (f" ({answer.splitlines()[0]})" if answer else ""))
            statuses.append(status)
            if status not in (404, 405):
                break  # the route exists and said no: another engine's route will not help
    raise FlushRefused(
        f"--flush-cache: {_who(identity)} did not reset its prefix cache: {'; '.join(tried)}; {_hint(identity, statuses)}"
    )
