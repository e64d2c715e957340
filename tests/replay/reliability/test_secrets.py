"""An API key echoed back by the server never lands in a file or on the terminal: the records,
the summary and report, run.json, and the preflight's error all show `[redacted]` instead."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from hostile import SSE_HEAD, USAGE, Conn, HostileServer, Request, chunk, delta, json_response
from reliability_helpers import ROOT, cli_command

from replay.results.records import read_records

KEY = "sk-echo-0123456789abcdef"


def _echo(conn: Conn, req: Request, n: int) -> bool:
    """Turn 1: the key in the answer, a tool call's arguments and a header; turn 2: in an HTTP 401."""
    key = req.headers.get("authorization", "").removeprefix("Bearer ")
    if n == 1:
        call = {
            "index": 0,
            "id": "c1",
            "type": "function",
            "function": {"name": "f", "arguments": json.dumps({"token": key})},
        }
        tool = b'data: {"choices":[{"index":0,"delta":{"tool_calls":[%s]},"finish_reason":null}]}\n\n' % (
            json.dumps(call).encode()
        )
        finish = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        head = SSE_HEAD.replace(b"\r\n\r\n", b"\r\nX-Replica: r-%s\r\n\r\n" % key.encode())
        return conn.send(
            head
            + chunk(delta(f"your key is {key}."))
            + chunk(tool)
            + chunk(finish)
            + chunk(USAGE)
            + chunk(b"data: [DONE]\n\n")
            + b"0\r\n\r\n"
        )
    return conn.send(json_response(401, {"error": {"message": f"key {key} is not allowed here"}}))


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    return subprocess.run(cli_command(args), cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)


def _files_holding(folder: Path, text: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_a_key_echoed_by_the_server_is_redacted_everywhere(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    shards = make_shards({"s1": [0.0, 0.0]})
    out = tmp_path / "run"
    with HostileServer(_echo) as srv:
        done = _run(
            ["replay", "run", str(shards), "--endpoint", srv.url, "--out", str(out), "--replica-header", "X-Replica"]
        )
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    first, second = read_records(out)
    assert first.ok and first.content == "your key is [redacted]." and first.replica == "r-[redacted]"
    assert json.loads(first.tool_calls[0]["function"]["arguments"]) == {"token": "[redacted]"}
    assert (second.error_kind, second.http_status) == ("http", 401)
    assert second.error_message == "HTTP 401: key [redacted] is not allowed here"
    assert _files_holding(out, KEY) == []


def test_a_key_echoed_in_a_refused_preflight_is_redacted(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    def refuse(conn: Conn, req: Request, n: int) -> bool:
        key = req.headers.get("authorization", "")
        return conn.send(json_response(401, {"error": f"bad credentials: {key}"}))

    with HostileServer(refuse, get=refuse) as srv:
        done = _run(
            ["replay", "run", str(make_shards({"s1": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "r")]
        )
    assert done.returncode == 1
    assert "was refused (HTTP 401: " in done.stderr and "[redacted]" in done.stderr
    assert KEY not in done.stdout + done.stderr
