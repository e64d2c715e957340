"""Asking an inference engine how it tokenises a chat request (docs/templates.md).

Each engine renders the messages with its own chat template and tokenises the result, without
generating anything:

- vLLM and SGLang: `POST /tokenize` with `{"model", "messages", "add_generation_prompt": true}`
  (plus `tools` and `chat_template_kwargs`) answers `{"tokens": [...]}`; `POST /detokenize` with
  `{"model", "tokens"}` answers `{"prompt": ...}`.
- llama.cpp's `llama-server`: `POST /apply-template` with the chat body answers `{"prompt": ...}`,
  the rendered text; `POST /tokenize` with `{"content", "add_special": false, "parse_special":
  true}` answers `{"tokens": [...]}`; `POST /detokenize` with `{"tokens"}` answers `{"content"}`.

vLLM's `/tokenize` reads an assistant message's reasoning from `reasoning` only: it silently drops
`reasoning_content` (its chat endpoint renames that field, its tokenize endpoint does not; vLLM
0.32), so the messages go there with the field renamed, and the engine renders the prompt its chat
endpoint renders.

`detect_api` tells them apart by what only one of them answers: llama.cpp's `GET /props`; SGLang's
`GET /get_model_info` (its `model_path`) or a `GET /get_server_info` (`/server_info`) holding its
server arguments; vLLM's `GET /version` (`{"version": ...}`). A route alone is no proof: vLLM in
dev mode also serves `/server_info` (its config under `vllm_config`).
"""

from __future__ import annotations

from typing import Any

import httpx

from ..client import INFO_MAX_BYTES, TOKENIZE_MAX_BYTES, BoundedReadError, BoundedResponse, read_bounded
from ..errors import ReplayError

#: The APIs `--api` names (auto: `detect_api`).
ENGINE_APIS = ("vllm", "sglang", "llamacpp")


class EngineApiError(ReplayError):
    """An endpoint that does not serve the tokenisation API asked of it, or answers it wrongly."""


def api_root(endpoint: str) -> str:
    """The server's root URL: the tokenisation routes sit beside `/v1`, not under it."""
    root = endpoint.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _get(client: httpx.Client, url: str) -> BoundedResponse:
    """GET `url`, its body capped and the exchange within one deadline (the client's timeout)."""
    deadline = client.timeout.read or 60.0
    return read_bounded(client, "GET", url, max_bytes=INFO_MAX_BYTES, deadline_s=deadline)


def engine_message(resp: BoundedResponse) -> str:
    """The engine's own words for a refused request: the `error.message` (vLLM, SGLang,
    llama.cpp, OpenAI), `error` or `detail` (FastAPI's "Not Found") of a JSON body, else the
    body's text; never a guess at the cause."""
    try:
        data = resp.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        for said in (err.get("message") if isinstance(err, dict) else err, data.get("detail"), data.get("message")):
            if isinstance(said, str) and said.strip():
                return said.strip()[:300]
    text = resp.text.strip()
    return text[:300] or "(empty body)"


#: What web frameworks answer for a route they do not have (FastAPI: vLLM, SGLang; llama.cpp's
#: own server): only these words say that the route, not the request, is missing.
NO_ROUTE = frozenset({"not found", "file not found", "method not allowed", "(empty body)"})


def served_models(client: httpx.Client, endpoint: str) -> list[str] | None:
    """The model ids `GET /v1/models` lists (None: no usable answer)."""
    listed = _get_ok(client, f"{api_root(endpoint)}/v1/models")
    data = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def _get_ok(client: httpx.Client, url: str) -> Any:
    try:
        resp = _get(client, url)
    except (httpx.HTTPError, BoundedReadError):
        return None
    if resp.status_code != 200:
        return None
    try:
        return resp.json()
    except ValueError:  # not JSON, or nested deeper than the parser's limit
        return None


#: Server-info keys of SGLang's own (its server arguments and state); vLLM's dev-mode
#: `/server_info` has none of them, only `vllm_config` (and its environment).
SGLANG_INFO_KEYS = frozenset({"model_path", "tokenizer_path", "tp_size", "internal_states"})


def _is_sglang(client: httpx.Client, root: str) -> bool:
    """SGLang's own answers: `/get_model_info` with the model path, or a server info holding its
    server arguments (not vLLM's dev-mode `/server_info`, which answers the same route)."""
    model = _get_ok(client, f"{root}/get_model_info")
    if isinstance(model, dict) and "model_path" in model:
        return True
    for route in ("/get_server_info", "/server_info"):
        info = _get_ok(client, f"{root}{route}")
        if isinstance(info, dict) and "vllm_config" not in info and SGLANG_INFO_KEYS & info.keys():
            return True
    return False


def _is_vllm(client: httpx.Client, root: str) -> bool:
    version = _get_ok(client, f"{root}/version")
    return isinstance(version, dict) and isinstance(version.get("version"), str)


def detect_api(client: httpx.Client, endpoint: str) -> str:
    """Which tokenisation API the endpoint speaks, from answers only one engine gives (a route
    another engine also serves in some mode is read for keys only its own engine writes)."""
    root = api_root(endpoint)
    try:
        _get(client, f"{root}/health")
    except httpx.HTTPError as exc:
        raise EngineApiError(f"{endpoint}: cannot connect ({exc}); is the server running at that address?") from None
    except BoundedReadError:
        pass  # it answered: what it said does not matter here
    props = _get_ok(client, f"{root}/props")
    if isinstance(props, dict) and ("chat_template" in props or "default_generation_settings" in props):
        return "llamacpp"
    if _is_sglang(client, root):
        return "sglang"
    if _is_vllm(client, root):
        return "vllm"
    raise EngineApiError(
        f"{endpoint}: cannot tell which engine this is (none of GET /props, /get_model_info, /get_server_info, "
        "/server_info, /version answered as llama.cpp, SGLang or vLLM do); name it with --api "
        "vllm|sglang|llamacpp (docs/templates.md)"
    )


class EngineTokenizer:
    """The engine's own rendering and tokenisation of chat requests, over one HTTP client."""

    def __init__(self, client: httpx.Client, endpoint: str, api: str, model: str) -> None:
        if api not in ENGINE_APIS:
            raise EngineApiError(f"--api {api!r}: choose one of {', '.join(ENGINE_APIS)} or auto")
        self.client = client
        self.endpoint = endpoint
        self.root = api_root(endpoint)
        self.api = api
        self.model = model

    def _post(self, route: str, body: dict[str, Any], want: str) -> Any:
        url = f"{self.root}{route}"
        try:
            resp = read_bounded(
                self.client,
                "POST",
                url,
                json=body,
                max_bytes=TOKENIZE_MAX_BYTES,
                deadline_s=self.client.timeout.read or 60.0,
            )
        except httpx.HTTPError as exc:
            raise EngineApiError(f"POST {url}: {type(exc).__name__}: {exc}; is the server running?") from None
        except BoundedReadError as exc:
            raise EngineApiError(str(exc)) from None
        if resp.status_code != 200:
            said = engine_message(resp)
            where = f"POST {url}" + ("" if self.api == "llamacpp" else f" (model {self.model!r})")
            if resp.status_code in (404, 405, 501) and said.lower().rstrip(".") in NO_ROUTE:
                needs = (
                    "POST /apply-template and POST /tokenize (llama.cpp's llama-server)"
                    if self.api == "llamacpp"
                    else "POST /tokenize with chat messages (vLLM, SGLang)"
                )
                raise EngineApiError(
                    f"{where} answered HTTP {resp.status_code}: {said}: the endpoint does not serve {needs}; "
                    "check --api (docs/templates.md)"
                )
            # the engine's own words, whatever the status: a 404 may be a model it does not serve
            raise EngineApiError(f"{where} answered HTTP {resp.status_code}: {said}")
        try:
            data = resp.json()
        except ValueError:  # not JSON, or nested deeper than the parser's limit
            raise EngineApiError(
                f"POST {url}: the answer is not JSON, or nests too deep ({resp.text[:100]!r})"
            ) from None
        if not isinstance(data, dict) or want not in data:
            raise EngineApiError(f"POST {url}: the answer has no {want!r} field ({str(data)[:200]})")
        return data[want]

    def tokenize(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, template_kwargs: dict[str, Any]
    ) -> list[int]:
        """Token ids of the prompt the engine makes of these messages (generation prompt included)."""
        if self.api == "vllm":
            messages = [_reasoning_renamed(m) for m in messages]
        chat: dict[str, Any] = {"messages": messages, "add_generation_prompt": True}
        if tools:
            chat["tools"] = tools
        if template_kwargs:
            chat["chat_template_kwargs"] = template_kwargs
        if self.api == "llamacpp":
            prompt = self._post("/apply-template", chat, "prompt")
            if not isinstance(prompt, str):
                raise EngineApiError(f"POST {self.root}/apply-template: 'prompt' is not text")
            ids = self._post("/tokenize", {"content": prompt, "add_special": False, "parse_special": True}, "tokens")
        else:
            ids = self._post("/tokenize", {"model": self.model, **chat}, "tokens")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise EngineApiError(f"POST {self.root}/tokenize: 'tokens' is not a list of token ids")
        return ids

    def detokenize(self, ids: list[int]) -> str | None:
        """The engine's text of token ids, or None when it cannot say (no such route)."""
        try:
            if self.api == "llamacpp":
                text = self._post("/detokenize", {"tokens": ids}, "content")
            else:
                text = self._post("/detokenize", {"model": self.model, "tokens": ids}, "prompt")
        except EngineApiError:
            return None
        return text if isinstance(text, str) else None


def _reasoning_renamed(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message with `reasoning_content` sent as `reasoning`, the field vLLM's
    /tokenize reads (in place, same order: the rendered prompt is the chat endpoint's)."""
    if message.get("role") != "assistant" or "reasoning_content" not in message or "reasoning" in message:
        return message
    return {("reasoning" if k == "reasoning_content" else k): v for k, v in message.items()}
