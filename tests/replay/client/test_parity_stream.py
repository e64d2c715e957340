"""Parity with the reference client on the stream: tool calls assembled as it assembles them, and
the output after the first chunk (TPOT's denominator) split as it splits it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from streams import parse_stream

from replay.client.sse import ChatStream


def _stream(*deltas: dict[str, Any], finish: str = "stop") -> ChatStream:
    events = [{"choices": [{"index": 0, "delta": d}]} for d in deltas]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return parse_stream([(k, body[k * 7 : (k + 1) * 7]) for k in range(len(body) // 7 + 1)])  # split anywhere


def test_a_delta_without_index_continues_call_zero() -> None:
    s = _stream(
        {"tool_calls": [{"id": "a", "type": "function", "function": {"name": "bash", "arguments": ""}}]},
        {"tool_calls": [{"function": {"arguments": '{"command":'}}]},
        {"tool_calls": [{"function": {"arguments": ' "ls"}'}}]},
    )
    assert s.tool_calls() == (
        {"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
    )


def test_a_name_sent_in_pieces_keeps_the_last_piece() -> None:
    s = _stream(
        {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "ba", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"name": "sh", "arguments": "{}"}}]},
        {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "bash", "arguments": "{}"}}]},
    )
    assert [c["function"]["name"] for c in s.tool_calls()] == ["sh", "bash"]


def test_first_chunk_size_and_the_output_after_it() -> None:
    # an MTP-style first chunk of several tokens, then one piece per chunk
    s = _stream({"content": "Hello big"}, {"content": " world"}, {"content": "!"})
    assert s.first_chars == len("Hello big")
    assert s.after_first() == (" world!", None, ())
    # reasoning first: the first reasoning piece is the first chunk; content counts whole
    s = _stream({"reasoning_content": "Think"}, {"reasoning_content": " more"}, {"content": "Answer"})
    assert s.first_chars == 5 and s.after_first() == ("Answer", " more", ())
    # a single reasoning piece: nothing of the reasoning follows the first chunk
    s = _stream({"reasoning_content": "Think"}, {"content": "A"}, {"content": "B"})
    assert s.after_first() == ("AB", None, ())


def test_a_pure_tool_call_answer_drops_its_first_tool_delta() -> None:
    s = _stream(
        {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "bash", "arguments": '{"c'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": 'md": 1}'}}]},
    )
    assert s.first_chars == len("bash") + len('{"c')
    content, reasoning, calls = s.after_first()
    assert (content, reasoning) == ("", None)
    assert calls == ({"id": None, "type": "function", "function": {"name": "", "arguments": 'md": 1}'}},)
    # with text before the calls, every tool delta counts after the first chunk
    s = _stream(
        {"content": "Running it."},
        {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "bash", "arguments": "{}"}}]},
    )
    assert s.after_first()[2] == s.tool_calls()


@pytest.mark.parametrize("split", [1, 3, 1000])
def test_first_chunk_is_the_same_however_the_bytes_are_split(split: int) -> None:
    events = [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in ("ab cd", "e", "f")]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    s = parse_stream([(k, body[k : k + split]) for k in range(0, len(body), split)])
    assert s.first_chars == 5 and s.after_first() == ("ef", None, ())
