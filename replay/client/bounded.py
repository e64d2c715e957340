"""Bounded reads of the small answers the tool asks a server for besides the chat stream: `GET
/v1/models`, `/health`, `/metrics`, `/version`, `/props`, server info, and the tokenizer
routes (`POST /tokenize`, `/apply-template`, `/detokenize`).

httpx reads a whole body into memory before a caller sees it, and a per-read timeout never
fires on a body that trickles: a server that answers with an endless body held gigabytes (2.5
GB in 11-17 s, even with `--skip-preflight`, which still identifies the server). Here each body
is read as it streams, refused past a size cap, and the whole exchange has one deadline. JSON is
parsed by orjson, whose nesting limit turns a deeply nested answer into an error instead of
Python's RecursionError. `Accept-Encoding: identity` keeps a compressed body from growing
past the cap after it was counted.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from ..errors import ReplayError
from .caps import format_size

#: Cap of a server-info answer (models list, health, version, props, server info): a few KiB
#: from any real server; a model list of thousands of entries stays far below it.
INFO_MAX_BYTES = 4 << 20
#: Cap of a `/metrics` page (Prometheus text; a busy vLLM's is a few hundred KiB).
METRICS_MAX_BYTES = 8 << 20
#: Cap of a tokenizer route's answer: the ids of a 1M-token prompt as JSON, or its text.
TOKENIZE_MAX_BYTES = 64 << 20

_IDENTITY = {"Accept-Encoding": "identity"}


class BoundedReadError(ReplayError):
    """A small answer broke its size cap or its deadline (the server is broken or hostile)."""


@dataclass(frozen=True)
class BoundedResponse:
    """What the tool keeps of such an answer: status, headers and the body's bytes."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not JSON or nests deeper than orjson allows."""
        return orjson.loads(self.content)


def _too_large(method: str, url: str, max_bytes: int) -> BoundedReadError:
    return BoundedReadError(
        f"{method} {url}: the answer exceeded {format_size(max_bytes)}; the server is broken or hostile"
    )


def _too_slow(method: str, url: str, deadline_s: float) -> BoundedReadError:
    return BoundedReadError(f"{method} {url}: no complete answer within {deadline_s:g} s")


def _shown(http: httpx.Client | httpx.AsyncClient, url: str) -> str:
    return str(http.base_url.join(url))


def _headers(kw: dict[str, Any]) -> dict[str, Any]:
    return {**kw, "headers": {**_IDENTITY, **(kw.get("headers") or {})}}


async def aread_bounded(
    http: httpx.AsyncClient, method: str, url: str, *, max_bytes: int, deadline_s: float, **kw: Any
) -> BoundedResponse:
    """One request over `http`, its body read up to `max_bytes` within `deadline_s` seconds in
    all; raises `BoundedReadError` past either, httpx errors as httpx raises them."""
    try:
        async with asyncio.timeout(deadline_s), http.stream(method, url, **_headers(kw)) as resp:
            got = bytearray()
            async for data in resp.aiter_raw():
                got += data
                if len(got) > max_bytes:
                    raise _too_large(method, _shown(http, url), max_bytes)
            return BoundedResponse(resp.status_code, resp.headers, bytes(got))
    except TimeoutError:
        raise _too_slow(method, _shown(http, url), deadline_s) from None


def read_bounded(
    http: httpx.Client, method: str, url: str, *, max_bytes: int, deadline_s: float, **kw: Any
) -> BoundedResponse:
    """The blocking twin of `aread_bounded`: the deadline is checked at every read, each read bounded by
    the client's own timeout."""
    end = time.monotonic() + deadline_s
    with http.stream(method, url, **_headers(kw)) as resp:
        got = bytearray()
        for data in resp.iter_raw():
            got += data
            if len(got) > max_bytes:
                raise _too_large(method, _shown(http, url), max_bytes)
            if time.monotonic() > end:
                raise _too_slow(method, _shown(http, url), deadline_s)
        return BoundedResponse(resp.status_code, resp.headers, bytes(got))
