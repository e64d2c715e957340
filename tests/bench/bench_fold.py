"""The SSE fold's cost per chunk (prints figures, asserts nothing): `replay.client.sse.ChatStream.feed`
alone, no socket, for the shapes a server streams: a tool call's argument pieces and plain
content, one event per read (a paced engine), two (a client keeping up with a saturating server),
eight (a client that fell behind) and a whole answer in one read; content as vLLM and SGLang
frame it. Each shape is folded with both shortcuts (the default), without `_framed_text` (every
read of a learned frame parsed whole), and by the rules alone (no shortcut), so a shortcut is
kept only while it pays (docs/closed-loop.md).

    .venv/bin/python tests/bench/bench_fold.py

Best of 7 rounds of CPU time (`time.process_time()`), so other load on the machine matters less.
"""

from __future__ import annotations

import json
import time

from replay.client.sse import ChatStream

CMD = "tests/bench/bench_fold.py"


def ev(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _delta(delta: dict[str, object], finish: str | None = None) -> bytes:
    return ev({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


class _NoFramedText(ChatStream):
    def _framed_text(self, data: bytes, t_ns: int) -> bool:
        return False  # a read of the learned frame is parsed whole


class _RulesOnly(_NoFramedText):
    def _one_event(self, data: bytes, t_ns: int) -> bool:
        return False  # every read goes through the parser's line rules


FOLDS = (("", ChatStream), (" [no _framed_text]", _NoFramedText), (" [rules only]", _RulesOnly))


def _chunk(delta: dict[str, object], **extra: object) -> bytes:
    head = {"id": "chatcmpl-7f3a9c", "object": "chat.completion.chunk", "created": 1764547200, "model": "Qwen/Qwen3.6"}
    return ev({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None, **extra}]})


def main() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}}
    first = _delta({"role": "assistant", "tool_calls": [call]})
    pieces = [_delta({"tool_calls": [{"index": 0, "function": {"arguments": "abab"}}]}) for _ in range(256)]
    text = [_delta({"content": "tok "}) for _ in range(256)]
    vllm = [_chunk({"content": f" tok{k}"}) for k in range(256)]
    sglang = [
        _chunk({"role": None, "content": f" tok{k}", "reasoning_content": None, "tool_calls": None}) for k in range(256)
    ]
    end = _delta({}, "stop") + b"data: [DONE]\n\n"
    shapes = (
        ("tool-call stream, one event per read", [first, *pieces, end]),
        ("content stream, one event per read", [*text, end]),
        ("content stream, 8 events per read", [b"".join(text[i : i + 8]) for i in range(0, 256, 8)] + [end]),
        ("vLLM-framed content, one event per read", [*vllm, end]),
        ("vLLM-framed content, 2 events per read", [b"".join(vllm[i : i + 2]) for i in range(0, 256, 2)] + [end]),
        ("vLLM-framed content, whole answer in one read", [b"".join(vllm) + end]),
        ("SGLang-framed content, one event per read", [*sglang, end]),
    )
    for name, reads in shapes:
        for label, fold in FOLDS:
            best = float("inf")
            for _ in range(7):
                t = time.process_time()
                for _ in range(50):
                    s = fold()
                    for k, r in enumerate(reads):
                        s.feed(r, k)
                    s.tool_calls()
                    s.after_first()
                best = min(best, (time.process_time() - t) / 50 / 256 * 1e6)
            print(f"{name}{label}: {best:.2f} µs CPU per chunk (fold only)  [{CMD}]")


if __name__ == "__main__":
    main()
