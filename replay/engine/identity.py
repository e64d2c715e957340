"""Who the engine says it is, read before a run and recorded in run.json (docs/audits.md): the
models it serves, its version or server info, and a hash of the chat template it serves.

The same-model audit compares these across a submission's performance points and its SWE-bench
runs, so a point measured on another model, another engine build or another template is seen.
Each engine says it its own way, and this asks each way once, best effort (a route an engine
does not serve is skipped, a failure is never fatal):

| route | who answers | what is read |
|---|---|---|
| `GET /v1/models` | every OpenAI-compatible server | the served ids; the card's `owned_by` (the engine's name) and `root` (its weights) |
| `GET /version` | vLLM, trajbench's simulator | `version` |
| `GET /get_model_info` | SGLang | `model_path` |
| `GET /get_server_info` (else `/server_info`) | SGLang, when it answered the one above | `version` |
| `GET /props` | llama.cpp's server | `chat_template` (hashed), `build_info`, `model_path` |

vLLM and SGLang serve no chat template over HTTP (SGLang's server info names a template, not its
text), so only llama.cpp's is hashed. Every GET goes through `_get_json`, which caps the body
(`MAX_BODY_BYTES`) and the JSON's nesting (orjson refuses a document nested deeper than its
limit), and only the few strings above are kept, each cut to a bounded length.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import httpx
import orjson

from ..client import base_without_v1
from ..results import EngineIdentity

MAX_BODY_BYTES = 1 << 20  # a models list, a version or server info is kilobytes; more is not one
_TIMEOUT_S = 5.0  # per request: an engine answers these from memory
_MAX_TEXT = 256  # characters kept of one id, version or path
_MAX_MODELS = 64
#: `owned_by` of a models card → the engine's name as run.json records it.
OWNERS = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp", "trajbench-sim": "trajbench-sim"}


def client(base_url: str, api_key: str | None) -> httpx.Client:
    """A plain client for the engine's own routes (no environment proxies: the target is what
    --endpoint names); the key is sent, never kept."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(base_url=base_without_v1(base_url), headers=headers, timeout=_TIMEOUT_S, trust_env=False)


def read_body(resp: httpx.Response, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The body of a streamed response, or None when it runs past `limit` bytes (never held whole)."""
    got = bytearray()
    for chunk in resp.iter_bytes():
        got += chunk
        if len(got) > limit:
            return None
    return bytes(got)


def _get_json(http: httpx.Client, path: str) -> Any:
    """GET `path` as JSON: None for anything else (an error, another status, a body over the cap,
    text that is not JSON or nested past orjson's depth limit)."""
    try:
        with http.stream("GET", path) as resp:
            if resp.status_code != 200:
                return None
            body = read_body(resp)
    except httpx.HTTPError:
        return None
    if body is None:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _text(value: Any) -> str | None:
    """A printable string of bounded length, or None."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = "".join(c for c in str(value) if c.isprintable()).strip()
    return text[:_MAX_TEXT] or None


def _field(doc: Any, key: str) -> str | None:
    return _text(doc.get(key)) if isinstance(doc, dict) else None


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def probe_engine(base_url: str, *, api_key: str | None = None) -> EngineIdentity:
    """Ask the engine who it is (blocking; a run calls it in a thread). Never fails: what it
    does not say is None, and `answered` lists the routes that said something."""
    answered: list[str] = []

    def get(http: httpx.Client, path: str) -> Any:
        doc = _get_json(http, path)
        if isinstance(doc, dict):
            answered.append(f"GET {path}")
            return doc
        return None

    with client(base_url, api_key) as http:
        models = get(http, "/v1/models")
        version = get(http, "/version")
        model_info = get(http, "/get_model_info")
        server_info = None
        if model_info is not None:  # SGLang: its version is in the server info
            server_info = get(http, "/get_server_info") or get(http, "/server_info")
        props = get(http, "/props")
    cards = models.get("data") if models is not None else None
    cards = [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else []
    ids = [t for t in (_field(c, "id") for c in cards[:_MAX_MODELS]) if t]
    owner = _first(_field(c, "owned_by") for c in cards)
    if owner in OWNERS:
        engine = OWNERS[owner]
    elif props is not None and any(k in props for k in ("chat_template", "build_info", "default_generation_settings")):
        engine = "llama.cpp"
    elif model_info is not None and "model_path" in model_info:
        engine = "sglang"
    else:
        engine = "unknown"
    template = props.get("chat_template") if props is not None else None
    return EngineIdentity(
        engine=engine,
        models=ids,
        model_path=_first(
            [
                *(_field(c, "root") for c in cards[:1]),
                _field(model_info, "model_path"),
                _field(props, "model_path"),
            ]
        ),
        version=_first([_field(version, "version"), _field(server_info, "version"), _field(props, "build_info")]),
        chat_template_sha256=hashlib.sha256(template.encode("utf-8")).hexdigest()
        if isinstance(template, str) and template
        else None,
        answered=answered,
    )
