"""SPEC §3–§5: salts, the history marker and the wire mapping of rows to messages."""

from __future__ import annotations

import pytest

from traces import TraceError, make_salt, messages_sha256, wire_messages
from traces.canonical import MessagesHasher
from traces.prompts import PromptBuilder
from traces.salt import blake2b_hex


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
        PromptBuilder(None, make_salt("mlperf", "x", 1), history_marker=True, source_id="x")
    PromptBuilder(None, make_salt("none", "x", 1), history_marker=True, source_id="x")


def test_history_marker_goes_on_reasoning_then_content_then_empty() -> None:
    with_reasoning = {"role": "assistant", "content": "c", "reasoning_content": "r"}
    assert wire_messages(with_reasoning, history_marker=True) == [
        {"role": "assistant", "content": "c", "reasoning_content": " r"}
    ]
    assert wire_messages({"role": "assistant", "content": "c"}, history_marker=True)[0]["content"] == " c"
    calls = [{"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]
    bare = wire_messages({"role": "assistant", "tool_calls": calls}, history_marker=True)[0]
    assert bare == {"role": "assistant", "tool_calls": calls, "content": " "}
    assert "content" not in wire_messages({"role": "assistant", "tool_calls": calls}, history_marker=False)[0]


def test_tool_row_becomes_one_message_per_result_and_user_is_unmarked() -> None:
    row = {"role": "tool", "tool_results": [{"tool_call_id": "a", "content": "1"}, {"tool_call_id": "b", "content": "2"}]}
    assert wire_messages(row, history_marker=True) == [
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
    ]
    assert wire_messages({"role": "user", "content": "hi", "name": "bob"}, history_marker=True) == [
        {"role": "user", "content": "hi", "name": "bob"}
    ]


def test_incremental_hash_equals_whole_prompt_hash() -> None:
    msgs = [{"role": "system", "content": "é"}, {"role": "user", "content": "a\nb"}, {"role": "tool", "tool_call_id": "x", "content": "\u2028"}]
    h = MessagesHasher()
    for k, m in enumerate(msgs, start=1):
        h.extend([m])
        assert h.hexdigest() == messages_sha256(msgs[:k])
