"""docs/requests.md, docs/salting.md, docs/history-marker.md: salts, the history marker and the wire mapping of rows to messages."""

from __future__ import annotations

from typing import Any

import pytest

from traces import TraceError, make_salt, messages_sha256, wire_messages
from traces.canonical import MessagesHasher
from traces.requests.marker import Marker, apply, candidates, choose
from traces.requests.prompts import PromptBuilder
from traces.requests.salt import blake2b_hex


@pytest.mark.parametrize(
    ("text", "digest"),
    [("1", "4461"), ("2", "ba75"), ("3", "0967"), ("conv1", "e643"), ("django__django-16899", "edc0")],
)
def test_salt_test_vectors(text: str, digest: str) -> None:
    assert blake2b_hex(text) == digest


def test_mlperf_salt_format_and_repeat_one_is_salted() -> None:
    salt = make_salt("mlperf", "conv1", 1)
    assert salt.apply("SYS") == "[salt: 4461]\n\nSYS\n\n[salt: e643]"
    assert make_salt("mlperf", "conv1", 2).conversation == salt.conversation
    assert make_salt("mlperf", "conv1", 2).repeat == "ba75"


def test_strong_salt_is_64_bit_and_seeded() -> None:
    a, b = make_salt("strong", "conv1", 1, seed=1), make_salt("strong", "conv1", 1, seed=2)
    assert len(a.repeat) == len(a.conversation) == 16
    assert a != b
    assert make_salt("none", "conv1", 1).apply("SYS") == "SYS"


def test_unsaltable_trajectory_is_a_hard_error() -> None:
    with pytest.raises(TraceError, match="no system prompt"):
        PromptBuilder(None, make_salt("mlperf", "x", 1), source_id="x")
    PromptBuilder(None, make_salt("none", "x", 1), source_id="x")


CALLS = [{"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]


@pytest.mark.parametrize(
    ("message", "field", "marked"),
    [
        # 1. inner whitespace of reasoning, then of content: the space doubles it
        (
            {"role": "assistant", "content": "a b", "reasoning_content": "think hard"},
            "reasoning_content",
            "think  hard",
        ),
        ({"role": "assistant", "content": "an answer", "reasoning_content": "r"}, "content", "an  answer"),
        ({"role": "assistant", "content": " lead  and\ttab"}, "content", " lead   and\ttab"),
        # trailing whitespace is not inner: a template's strip would erase a space there; and
        # never in tool-call arguments (engines parse them into objects): a leading space instead
        ({"role": "assistant", "content": "word ", "tool_calls": CALLS}, "content", " word "),
        # 2. a leading space on the first non-empty text field, or content " " when there is none
        ({"role": "assistant", "content": "word"}, "content", " word"),
        ({"role": "assistant", "content": "c", "reasoning_content": "r"}, "reasoning_content", " r"),
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{**CALLS[0], "function": {"name": "f", "arguments": "x"}}],
            },
            "content",
            " ",
        ),
    ],
)
def test_history_marker_positions(message: dict[str, Any], field: str, marked: str) -> None:
    marker = choose(message)
    assert marker is not None
    out = apply(message, marker)
    assert out[field] == marked
    assert out.get("tool_calls") == message.get("tool_calls")  # never inside tool-call arguments
    changed = [k for k in out if out[k] != message.get(k)]
    assert changed == [field]


def test_the_marker_never_goes_into_tool_call_arguments() -> None:
    """vLLM and SGLang parse the arguments string into an object before templating, so a space
    there changes nothing the engine tokenises (docs/history-marker.md)."""
    msg = {"role": "assistant", "content": None, "tool_calls": CALLS}
    assert all(m.field in ("content", "reasoning_content") for m in candidates(msg))
    # even when a template check rejects every text position, arguments are not tried
    assert choose(msg, lambda m: m.get("tool_calls") != CALLS) is None
    with pytest.raises(TraceError, match="rebuild the shards"):  # an older shard's choice
        apply(msg, Marker("arguments", 1))


def test_marker_content_goes_right_after_role() -> None:
    bare = {
        "role": "assistant",
        "name": "bot",
        "tool_calls": [{**CALLS[0], "function": {"name": "f", "arguments": "[]"}}],
    }
    marker = choose(bare)
    assert marker is not None
    out = apply(bare, marker)
    assert list(out) == ["role", "content", "name", "tool_calls"] and out["content"] == " "


def test_marker_check_takes_the_first_position_the_template_keeps() -> None:
    msg = {"role": "assistant", "content": "an answer", "reasoning_content": "some thought"}
    # a template that drops reasoning: the content position is the first that changes the render
    assert choose(msg, lambda m: m["content"] != msg["content"]) == Marker("content", 2)
    assert choose(msg, lambda m: False) is None


def test_wire_messages_follow_the_reference_field_order() -> None:
    row = {
        "role": "tool",
        "tool_results": [{"tool_call_id": "a", "content": "1"}, {"tool_call_id": "b", "content": "2"}],
    }
    assert [list(m) for m in wire_messages(row)] == [["role", "content", "tool_call_id"]] * 2
    assert wire_messages({"turn": 1, "role": "user", "name": "bob", "content": "hi"}) == [
        {"role": "user", "content": "hi", "name": "bob"}
    ]
    flat = {"reasoning_content": "r", "tool_calls": CALLS, "role": "assistant", "content": "c", "turn": 2}
    assert list(wire_messages(flat)[0]) == ["role", "content", "tool_calls", "reasoning_content"]
    assert "content" not in wire_messages({"role": "assistant", "tool_calls": CALLS})[0]


def test_incremental_hash_equals_whole_prompt_hash() -> None:
    msgs = [
        {"role": "system", "content": "é"},
        {"role": "user", "content": "a\nb"},
        {"role": "tool", "tool_call_id": "x", "content": "\u2028"},
    ]
    h = MessagesHasher()
    for k, m in enumerate(msgs, start=1):
        h.extend([m])
        assert h.hexdigest() == messages_sha256(msgs[:k])
