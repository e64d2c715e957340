"""A loopback HTTP server that tokenises chat requests like an engine, for `traces check-template`.

It speaks vLLM's API (`GET /version`, `POST /tokenize` with messages, `POST /detokenize`; as
"vllm-dev" also vLLM's dev-mode `GET /server_info`), SGLang's (`GET /get_model_info`, `GET
/get_server_info` and `/server_info` with its server arguments, the same `/tokenize`), or
llama.cpp's (`GET /props`, `POST /apply-template`, `POST /tokenize` with content, `POST
/detokenize`), or nothing at all ("bare": every route 404, as FastAPI answers a route it lacks), and
renders with a real tokenizer and template: the client's own, with `drift` applied to the rendered
text, so a test knows exactly where the engine parts from the client.

As vLLM 0.32 does, the vLLM flavours' `/tokenize` drops an assistant's `reasoning_content` and
renders its `reasoning` (the chat endpoint takes either); given `served` names, `GET /v1/models`
lists them and vLLM's `/tokenize` answers any other model name with vLLM's own HTTP 404.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from traces.tokenizers import ChatTokenizer


@contextmanager
def template_server(
    tokenizer: ChatTokenizer,
    flavour: str,
    drift: Callable[[str], str] = lambda text: text,
    served: tuple[str, ...] | None = None,
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(base URL, the bodies it was posted), while the server runs."""
    seen: list[dict[str, Any]] = []
    vllm = flavour in ("vllm", "vllm-dev")

    def vllm_message(m: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in m.items() if k not in ("reasoning_content", "reasoning")}
        if m.get("reasoning") is not None:
            out["reasoning_content"] = m["reasoning"]
        return out

    def render(body: dict[str, Any]) -> str:
        assert body.get("add_generation_prompt") is True
        messages = [vllm_message(m) for m in body["messages"]] if vllm else body["messages"]
        return drift(tokenizer.render(messages, body.get("tools")))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _answer(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            if self.path == "/v1/models" and served is not None and flavour != "bare":
                self._answer(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in served]})
            elif self.path == "/health" and flavour != "bare":
                self._answer(200, {"status": "ok"})
            elif self.path == "/props" and flavour == "llamacpp":
                self._answer(200, {"chat_template": tokenizer.renderer.template_text})
            elif self.path == "/version" and flavour in ("vllm", "vllm-dev"):
                self._answer(200, {"version": "0.0-test"})
            elif self.path == "/server_info" and flavour == "vllm-dev":  # VLLM_SERVER_DEV_MODE=1
                self._answer(200, {"vllm_config": "ModelConfig(model='test', ...)", "vllm_env": {}})
            elif self.path == "/get_model_info" and flavour == "sglang":
                self._answer(200, {"model_path": "test", "tokenizer_path": "test", "is_generation": True})
            elif self.path in ("/get_server_info", "/server_info") and flavour == "sglang":
                self._answer(200, {"model_path": "test", "tp_size": 1, "internal_states": [{}], "version": "0.0-test"})
            else:
                self._answer(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, **body})
            if vllm and served is not None and self.path == "/tokenize" and body.get("model") not in served:
                said = f"The model `{body.get('model')}` does not exist. Valid aliases: {', '.join(served)}."
                self._answer(404, {"error": {"message": said, "type": "NotFoundError", "param": "model", "code": 404}})
            elif flavour in ("vllm", "vllm-dev", "sglang") and self.path == "/tokenize":
                ids = tokenizer.encode(render(body))
                self._answer(200, {"tokens": ids, "count": len(ids), "max_model_len": 1 << 20})
            elif flavour in ("vllm", "vllm-dev") and self.path == "/detokenize":
                self._answer(200, {"prompt": tokenizer.decode(body["tokens"])})
            elif flavour == "llamacpp" and self.path == "/apply-template":
                self._answer(200, {"prompt": render(body)})
            elif flavour == "llamacpp" and self.path == "/tokenize":
                assert body["add_special"] is False and body["parse_special"] is True
                self._answer(200, {"tokens": tokenizer.encode(body["content"])})
            elif flavour == "llamacpp" and self.path == "/detokenize":
                self._answer(200, {"content": tokenizer.decode(body["tokens"])})
            else:
                self._answer(404, {"detail": "Not Found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
