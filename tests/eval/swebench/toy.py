"""Tiny SWE-bench task repositories and a scripted OpenAI-compatible endpoint, for the tests.

The task: `calc.py` has `add` subtracting (the bug) and a correct `sub`. The instance's
`test_patch` adds `tests/test_calc.py`; FAIL_TO_PASS is `test_add`, PASS_TO_PASS is `test_sub`,
and `eval_script` has the harness's shape (set -uxo pipefail, cd /testbed, test patch applied from
a heredoc, the test command between the Start/End Test Output markers).

The endpoint answers every chat request with the next bash tool call of the script named in the
task text (`[script:NAME]`); the step is the number of assistant messages so far, so the server
keeps no state and serves concurrent agents.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TEST_FILE = "from calc import add, sub\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"

SCRIPTS: dict[str, list[str]] = {
    # reads, leaks nothing even when it lists the environment, fixes add, submits
    "fix": ["cat calc.py", "env | sort", "sed -i '2s/a - b/a + b/' calc.py && git diff > patch.txt", SUBMIT],
    # "fixes" the wrong function: add stays broken and sub breaks too
    "break": ["sed -i '6s/a - b/a * b/' calc.py && git diff > patch.txt", SUBMIT],
    # keeps working for a long time (the interrupt test stops it)
    "slow": ["sleep 0.2"] * 200 + [SUBMIT],
}


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def make_repo(repos: Path, name: str = "toy__calc") -> tuple[Path, str]:
    """A git repository with the bug; returns (path, base commit)."""
    repo = repos / name
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text(CALC)
    _git(repo, "add", "calc.py")
    _git(repo, "commit", "-q", "-m", "base")
    return repo, _git(repo, "rev-parse", "HEAD")


def make_test_patch() -> str:
    lines = TEST_FILE.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/tests/test_calc.py b/tests/test_calc.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_calc.py\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def eval_script(base: str) -> str:
    return (
        "\n".join(
            [
                "#!/bin/bash",
                "set -uxo pipefail",
                "cd /testbed",
                "git apply -v - <<'EOF_114329324912'",
                make_test_patch().rstrip("\n"),
                "EOF_114329324912",
                ": '>>>>> Start Test Output'",
                f"PYTHONDONTWRITEBYTECODE=1 {sys.executable} -m pytest -rA -p no:cacheprovider tests/test_calc.py",
                ": '>>>>> End Test Output'",
                f"git checkout {base} -- calc.py",
            ]
        )
        + "\n"
    )


def instance(iid: str, script: str, base: str, repo: str = "toy/calc") -> dict[str, Any]:
    return {
        "repo": repo,
        "instance_id": iid,
        "base_commit": base,
        "patch": "",
        "test_patch": make_test_patch(),
        "problem_statement": f"[script:{script}] add() returns a - b; it must return a + b.",
        "hints_text": "",
        "created_at": "2026-01-01T00:00:00Z",
        "version": "0.1",
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_sub"]),
        "environment_setup_commit": base,
        "image": f"swebench/sweb.eval.x86_64.{iid}:latest",
        "eval_script": eval_script(base),
        "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class ScriptedEndpoint:
    """A loopback OpenAI-compatible server answering with scripted bash tool calls."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with endpoint._lock:
                    endpoint.requests.append(
                        {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                    )
                reply = endpoint.answer(body)
                if body.get("stream"):
                    self._sse(reply)
                else:
                    data = json.dumps(reply).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def _sse(self, reply: dict[str, Any]) -> None:
                msg = reply["choices"][0]["message"]
                delta = {
                    "role": "assistant",
                    "content": msg["content"],
                    "tool_calls": [{**tc, "index": i} for i, tc in enumerate(msg["tool_calls"])],
                }
                chunks = [
                    {
                        **reply,
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    },
                    {
                        **reply,
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                    },
                ]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for c in chunks:
                    self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        text = task if isinstance(task, str) else json.dumps(task)
        name = next(n for n in SCRIPTS if f"[script:{n}]" in text)
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        command = SCRIPTS[name][min(step, len(SCRIPTS[name]) - 1)]
        return {
            "id": f"chatcmpl-{name}-{step}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": f"THOUGHT: step {step} of script {name}.",
                        "tool_calls": [
                            {
                                "id": f"call_{step}",
                                "type": "function",
                                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def __enter__(self) -> ScriptedEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
