"""The OpenAI wire shapes the simulator sends: SSE chunk frames, usage, full responses, errors.

Streaming follows vLLM: a role chunk, then `reasoning_content` deltas, `content` deltas, tool
calls as `tool_calls` deltas (index, id, type and function.name first, then argument pieces), a
final chunk with `finish_reason`, a usage chunk (`choices: []`) when asked, then `data: [DONE]`.
Each step's delta is encoded before streaming starts (the answer is known at admission; distinct
pieces are encoded once per process), and the frames of all steps ready at a wake-up are made by
one `bytes.join` over a per-response template and sent in one socket write. With timestamps on,
each frame ends with `"sim_t_ns": <monotonic ns at write>`.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from .answers import CONTENT, REASONING, TOOL_ARGS, Plan
from .config import FINGERPRINT

DONE = b"data: [DONE]\n\n"
_CLOSE = b"}\n\n"
_MEMO_LIMIT = 1 << 18
_content_memo: dict[str, bytes] = {}
_reasoning_memo: dict[str, bytes] = {}


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


def _memo(memo: dict[str, bytes], key: bytes, text: str) -> bytes:
    # Answers reuse pieces heavily (synthetic ones are slices of one filler text), so each
    # distinct piece is JSON-encoded once per process, not once per token.
    delta = memo.get(text)
    if delta is None:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        delta = memo[text] = key + orjson.dumps(text) + b"}"
    return delta


def step_deltas(plan: Plan, tool_ids: list[str]) -> list[bytes]:
    """The `delta` object of each decode step, JSON-encoded."""
    if plan.kinds is None:
        memo = _content_memo
        return [memo.get(t) or _memo(memo, b'{"content":', t) for t in plan.texts]
    out = []
    dumps = orjson.dumps
    for kind, index, text in plan.steps():
        if kind == CONTENT:
            out.append(_memo(_content_memo, b'{"content":', text))
        elif kind == REASONING:
            out.append(_memo(_reasoning_memo, b'{"reasoning_content":', text))
        elif kind == TOOL_ARGS:
            out.append(b'{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}' % (index, dumps(text)))
        else:
            call = {
                "index": index,
                "id": tool_ids[index],
                "type": "function",
                "function": {"name": text, "arguments": ""},
            }
            out.append(b'{"tool_calls":[' + dumps(call) + b"]}")
    return out


ROLE_DELTA = b'{"role":"assistant"}'


class Framer:
    """Turns deltas into the SSE frames of one response, from a per-response byte template.

    With `stamped`, every frame carries `"sim_t_ns"`: `time.monotonic_ns()` when it was built,
    right before the write.
    """

    def __init__(self, response_id: str, created: int, model: str, *, stamped: bool = False) -> None:
        head = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": FINGERPRINT,
        }
        self._head = b"data: " + orjson.dumps(head)[:-1]
        self._prefix = self._head + b',"choices":[{"index":0,"delta":'
        self._open_tail = b',"logprobs":null,"finish_reason":null}]'
        self.stamped = stamped

    def _close(self) -> bytes:
        return b',"sim_t_ns":%d}\n\n' % time.monotonic_ns() if self.stamped else _CLOSE

    def frames(self, deltas: list[bytes]) -> bytes:
        """The frames of these step deltas as one buffer (one join, whatever their number)."""
        if not deltas:
            return b""
        tail = self._open_tail + self._close()
        return self._prefix + (tail + self._prefix).join(deltas) + tail

    def finish(self, reason: str) -> bytes:
        return self._prefix + b'{},"logprobs":null,"finish_reason":' + orjson.dumps(reason) + b"}]" + self._close()

    def usage(self, u: dict[str, Any]) -> bytes:
        return self._head + b',"choices":[],"usage":' + orjson.dumps(u) + self._close()

    def error(self, message: str, code: int) -> bytes:
        return (
            b"data: "
            + orjson.dumps({"error": {"message": message, "type": "server_error", "code": code}})[:-1]
            + self._close()
        )


def completion(response_id: str, created: int, model: str, plan: Plan, u: dict[str, Any]) -> dict[str, Any]:
    """The non-streaming chat.completion object."""
    message: dict[str, Any] = {"role": "assistant", "content": plan.content or (None if plan.tool_calls else "")}
    if plan.reasoning:
        message["reasoning_content"] = plan.reasoning
    if plan.tool_calls:
        message["tool_calls"] = list(plan.tool_calls)
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish_reason}],
        "usage": u,
    }


def error_body(message: str, code: int, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code}, "system_fingerprint": FINGERPRINT}
