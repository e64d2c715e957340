"""A loopback HTTP server that tokenises chat requests like an engine, for `traces check-template`.

It speaks vLLM's API (`GET /version`, `POST /tokenize` with messages, `POST /detokenize`; as
"vllm-dev" also vLLM's dev-mode `GET /server_info`), SGLang's (`GET /get_model_info`, `GET
/get_server_info` and `/server_info` with its server arguments, the same `/tokenize`), or
llama.cpp's (`GET /props`, `POST /apply-template`, `POST /tokenize` with content, `POST
/detokenize`), or nothing at all ("bare": every route 404), and renders with a real tokenizer and
template: the client's own, with `drift` applied to the rendered text, so a test knows exactly
where the engine parts from the client.
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
    tokenizer: ChatTokenizer, flavour: str, drift: Callable[[str], str] = lambda text: text
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(base URL, the bodies it was posted), while the server runs."""
    seen: list[dict[str, Any]] = []

    def render(body: dict[str, Any]) -> str:
        assert body.get("add_generation_prompt") is True
        return drift(tokenizer.render(body["messages"], body.get("tools")))

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
            if self.path == "/health" and flavour != "bare":
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
                self._answer(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, **body})
            if flavour in ("vllm", "vllm-dev", "sglang") and self.path == "/tokenize":
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
                self._answer(404, {"error": "not found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
