"""Who the engine says it is (`probe_engine`) and the reset of its prefix cache (`--flush-cache`),
against loopback servers that answer as vLLM, SGLang and llama.cpp do (docs/audits.md)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import cli_in_process

from replay.engine import FlushRefused, flush_prefix_cache, probe_engine
from replay.results import EngineIdentity

Routes = dict[tuple[str, str], tuple[int, bytes]]


@contextmanager
def engine(routes: Routes) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """A loopback server answering `routes[(method, path)]` (404 otherwise); yields its URL and
    the requests it saw."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, method: str) -> None:
            seen.append((method, self.path))
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, body = routes.get((method, self.path), (404, b'{"detail": "Not Found"}'))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def js(value: Any) -> bytes:
    return json.dumps(value).encode()


def models(owner: str, *ids: str, root: str | None = None) -> tuple[int, bytes]:
    return 200, js(
        {"object": "list", "data": [{"id": i, "object": "model", "owned_by": owner, "root": root or i} for i in ids]}
    )


VLLM: Routes = {
    ("GET", "/v1/models"): models("vllm", "Qwen/Qwen3.6-35B-A3B", root="/models/qwen3.6"),
    ("GET", "/version"): (200, js({"version": "0.11.0"})),
}
SGLANG: Routes = {
    ("GET", "/v1/models"): models("sglang", "qwen"),
    ("GET", "/get_model_info"): (200, js({"model_path": "/models/qwen", "tokenizer_path": "/models/qwen"})),
    ("GET", "/get_server_info"): (200, js({"version": "0.5.3", "chat_template": None, "tp_size": 8})),
}
TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
LLAMA: Routes = {
    ("GET", "/v1/models"): models("llamacpp", "qwen.gguf"),
    ("GET", "/props"): (
        200,
        js({"chat_template": TEMPLATE, "build_info": "b6500-1a2b3c", "model_path": "/m/qwen.gguf"}),
    ),
}


def test_each_engine_says_who_it_is_its_own_way() -> None:
    with engine(VLLM) as (url, _):
        v = probe_engine(url + "/v1")  # a base URL with /v1 is the same server
    assert v == EngineIdentity(
        "vllm", ["Qwen/Qwen3.6-35B-A3B"], "/models/qwen3.6", "0.11.0", None, ["GET /v1/models", "GET /version"]
    )
    with engine(SGLANG) as (url, _):
        s = probe_engine(url)
    assert (s.engine, s.version, s.model_path, s.chat_template_sha256) == ("sglang", "0.5.3", "qwen", None)
    with engine(LLAMA) as (url, _):
        ll = probe_engine(url)
    assert (ll.engine, ll.version, ll.model_path) == ("llama.cpp", "b6500-1a2b3c", "qwen.gguf")
    assert ll.chat_template_sha256 == hashlib.sha256(TEMPLATE.encode()).hexdigest()


def test_a_server_that_says_nothing_or_too_much_is_unknown_never_an_error() -> None:
    huge = b'{"version": "' + b"9" * (2 << 20) + b'"}'  # over the 1 MiB cap
    deep = b"[" * 5000 + b"]" * 5000  # nested past orjson's limit
    routes: Routes = {
        ("GET", "/version"): (200, huge),
        ("GET", "/props"): (200, deep),
        ("GET", "/v1/models"): (500, b""),
    }
    with engine(routes) as (url, _):
        found = probe_engine(url)
    assert found == EngineIdentity("unknown", [], None, None, None, [])
    dead = probe_engine("http://127.0.0.1:9")  # nothing listens there
    assert dead.engine == "unknown" and dead.answered == []


@pytest.mark.slow
def test_the_reset_each_engine_serves_is_called_and_recorded() -> None:
    routes = {**VLLM, ("POST", "/reset_prefix_cache"): (200, b"")}
    with engine(routes) as (url, seen):
        done = flush_prefix_cache(url, probe_engine(url))
    assert (done.route, done.engine, done.status, done.answer) == ("POST /reset_prefix_cache", "vllm", 200, "")
    assert seen[-1] == ("POST", "/reset_prefix_cache")
    routes = {**SGLANG, ("POST", "/flush_cache"): (200, b"Cache flushed.\nPlease check backend logs for more details.")}
    with engine(routes) as (url, seen):
        done = flush_prefix_cache(url, probe_engine(url))
    assert (done.route, done.answer.splitlines()[0]) == ("POST /flush_cache", "Cache flushed.")
    assert ("POST", "/reset_prefix_cache") not in seen  # SGLang is asked its own route only
    with engine({("POST", "/flush_cache"): (200, b"ok")}) as (url, seen):  # an unknown engine: both, in turn
        done = flush_prefix_cache(url, probe_engine(url))
    assert done.route == "POST /flush_cache" and [s for s in seen if s[0] == "POST"] == [
        ("POST", "/reset_prefix_cache"),
        ("POST", "/flush_cache"),
    ]


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        (
            VLLM,
            r"--flush-cache: vllm 0\.11\.0 did not reset its prefix cache: POST /reset_prefix_cache answered HTTP 404 "
            r"\(\{\"detail\": \"Not Found\"\}\); vLLM serves POST /reset_prefix_cache only when started with "
            r"VLLM_SERVER_DEV_MODE=1",
        ),
        (
            {**SGLANG, ("POST", "/flush_cache"): (400, b"Cache not flushed. Requests are running.")},
            r"sglang 0\.5\.3 did not reset .*HTTP 400 \(Cache not flushed\. Requests are running\.\); SGLang flushes "
            r"only when no request is running or waiting",
        ),
        (LLAMA, r"--flush-cache: llama\.cpp b6500-1a2b3c has no prefix-cache reset to call; drop --flush-cache"),
        (
            {},
            r"the engine \(of unknown kind\) did not reset .*POST /reset_prefix_cache answered HTTP 404 .*; "
            r"POST /flush_cache answered HTTP 404 .*restart the server before each point instead \(docs/audits\.md\)",
        ),
    ],
)
def test_an_engine_without_a_reset_is_refused_by_name(routes: Routes, message: str) -> None:
    with engine(routes) as (url, _), pytest.raises(FlushRefused, match=message):
        flush_prefix_cache(url, probe_engine(url))


def test_a_run_asked_to_flush_an_engine_that_cannot_never_starts(
    make_shards: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run: the preflight passes, the reset is refused, nothing is replayed or written."""
    from loopback_server import LoopbackServer

    out = tmp_path / "run"
    with LoopbackServer() as srv:
        code, _, err = cli_in_process(
            [
                "replay",
                "run",
                str(make_shards({"t": [0.0]})),
                "--endpoint",
                srv.base_url,
                "--flush-cache",
                "--out",
                str(out),
            ],
            capsys,
        )
        turns = len(srv.books.requests)
    assert code == 1 and "Traceback" not in err
    assert err.startswith("Error: --flush-cache: the engine (of unknown kind) did not reset its prefix cache: ")
    assert turns == 0 and not out.exists()
