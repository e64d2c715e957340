"""A minimal blocking client for the simulator tests: POST a chat body, collect the SSE events.

Deliberately independent of replay's own client and SSE parser, so the simulator's wire shape is
checked against a reading of the protocol, not against the code that consumes it.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

_unique = itertools.count()


@dataclass
class Stream:
    status: int
    headers: httpx.Headers
    lines: list[str] = field(default_factory=list)  # every `data:` payload, in order
    error: httpx.HTTPError | None = None  # how the stream broke, if it did

    @property
    def done(self) -> bool:
        return bool(self.lines) and self.lines[-1] == "[DONE]"

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.lines if x != "[DONE]"]

    def deltas(self) -> list[dict[str, Any]]:
        return [e["choices"][0]["delta"] for e in self.events() if e.get("choices")]


def stream(base_url: str, body: dict[str, Any], headers: dict[str, str] | None = None, timeout: float = 30.0) -> Stream:
    """Stream one request; a broken stream is returned with `error` set (status 0: no response)."""
    out = Stream(0, httpx.Headers())
    with httpx.Client(timeout=timeout) as client:
        try:
            with client.stream(
                "POST", base_url + "/v1/chat/completions", json={**body, "stream": True}, headers=headers or {}
            ) as r:
                out.status, out.headers = r.status_code, r.headers
                if r.status_code != 200:
                    r.read()
                    out.lines.append(r.text)
                    return out
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        out.lines.append(line[6:])
        except httpx.HTTPError as exc:
            out.error = exc
    return out


def complete(
    client: httpx.Client, base_url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    r = client.post(base_url + "/v1/chat/completions", json={**body, "stream": False}, headers=headers or {})
    r.raise_for_status()
    answer: dict[str, Any] = r.json()
    return answer


def chat(text: str | None = None, tools: bool = False, max_tokens: int | None = 64) -> dict[str, Any]:
    """A small chat body whose prompt is unique unless `text` is given (tests share servers)."""
    body: dict[str, Any] = {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": f"test {next(_unique)}" if text is None else "fixed"},
            {"role": "user", "content": text or "hello"},
        ],
        "stream_options": {"include_usage": True},
    }
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "bash",
                    "description": "run",
                    "parameters": {
                        "type": "object",
                        "properties": {"command": {"type": "string"}},
                        "required": ["command"],
                    },
                },
            }
        ]
    return body
