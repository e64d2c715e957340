"""The `openai-messages` reader and the shared OpenAI-messages → flat rows converter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sinks import raising_sink

import traces
from traces.formats import FORMATS
from traces.formats.openai_messages import convert_messages, file_stem, read, text_content

DATA = Path(__file__).parent / "data" / "formats"
GOOD = DATA / "openai_messages_good.jsonl"


def _read(path: Path) -> tuple[list[traces.Trajectory], list[str]]:
    errors: list[traces.TraceFormatError] = []
    return list(read(str(path), errors.append)), [str(e) for e in errors]


def test_reads_one_conversation_per_line() -> None:
    trajs, errors = _read(GOOD)
    assert errors == []
    assert [t.id for t in trajs] == ["chat-1", "openai_messages_good-L2"]  # no id: file stem + line


def test_rows_field_by_field() -> None:
    chat = _read(GOOD)[0][0]
    user, call, tool, answer = chat.rows
    assert (user.turn, user.role, user.content, user.system) == (
        1,
        "user",
        "What is 2+2?Use the tool.",
        "You are helpful.",
    )
    assert user.tools is not None and user.tools[0]["function"]["name"] == "calc"
    # empty text beside a tool call is omitted (SPEC §3); the missing id is generated
    assert call.content is None
    assert call.tool_calls == (
        {"id": "call_2_0", "type": "function", "function": {"name": "calc", "arguments": '{"expr": "2+2"}'}},
    )
    # a tool message without tool_call_id answers the call at its position
    assert tool.tool_results == ({"tool_call_id": "call_2_0", "content": "4"},)
    assert (answer.content, answer.reasoning_content) == ("4", "The tool said 4.")  # `reasoning` alias


def test_broken_lines_name_location_and_rule() -> None:
    trajs, errors = _read(DATA / "openai_messages_bad.jsonl")
    assert trajs == []
    expected = [
        "openai_messages_bad.jsonl:1: conversation chat-9: missing `messages`",
        "openai_messages_bad.jsonl:2 (messages[1]): conversation chat-10: content part 0 is 'image_url'; only text parts can be replayed",
        "openai_messages_bad.jsonl:3 (messages[2]): conversation chat-11: only one system message is supported",
        "openai_messages_bad.jsonl:4 (messages[2]): conversation chat-12: tool message has no tool_call_id",
        "openai_messages_bad.jsonl:5 (messages[2]): conversation chat-13 turn 3: a user row cannot directly follow an assistant row with tool_calls",
    ]
    assert len(errors) == len(expected)
    for want, got in zip(expected, errors):
        assert want in got


def test_json_document_array_is_accepted(tmp_path: Path) -> None:
    records = [json.loads(line) for line in GOOD.read_text().splitlines()]
    path = tmp_path / "convs.json"
    path.write_text(json.dumps(records))
    trajs, errors = _read(path)
    assert errors == [] and [t.id for t in trajs] == ["chat-1", "convs-1"]
    assert trajs[0].rows == _read(GOOD)[0][0].rows


def test_converter_merges_and_keeps_fields() -> None:
    errors: list[traces.TraceFormatError] = []
    messages = [
        {"role": "user", "content": "a", "delay_seconds": 1, "name": "bob"},
        {"role": "user", "content": "b ", "delay_seconds": 2},
        {"role": "assistant", "content": "x", "intent_codes": ["I001"], "refusal": None, "extra": {"big": 1}},
    ]
    rows = convert_messages(messages, path="p", line=7, base="", conversation="c", sink=errors.append)
    assert errors == [] and rows is not None
    assert [fr.data for fr in rows] == [
        {"role": "user", "content": "a\n\nb", "name": "bob", "delay_seconds": 3, "turn": 1},
        {"role": "assistant", "content": "x", "intent_codes": ["I001"], "turn": 2},
    ]
    assert [(fr.line, fr.where) for fr in rows] == [(7, "messages[0]"), (7, "messages[2]")]


def test_text_content_and_file_stem() -> None:
    assert text_content([{"type": "text", "text": "a"}, "b"]) == "ab"  # joined as chat templates join text parts
    with pytest.raises(ValueError, match="only text parts"):
        text_content([{"type": "input_audio"}])
    assert file_stem("x/django__django-1.traj.json.zst") == "django__django-1"


def test_registered_and_builds_shards(tmp_path: Path) -> None:
    assert FORMATS["openai-messages"].read is read
    result = traces.build_shards(
        [str(GOOD)], tmp_path / "out", traces.BuildOptions(format="openai-messages", name="om")
    )
    assert traces.to_json(result.manifest.counts) == {"trajectories": 2, "instances": 2, "client_turns": 3}
    again = traces.build_shards(
        [str(GOOD)], tmp_path / "out2", traces.BuildOptions(format="openai-messages", name="om")
    )
    assert again.manifest.content_hash == result.manifest.content_hash
    shards = traces.Shards(tmp_path / "out")
    prompts = list(traces.iter_prompts(shards.find("chat-1"), markers=False))
    assert prompts[1].messages[1:] == [
        {"role": "user", "content": "What is 2+2?Use the tool."},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_2_0", "type": "function", "function": {"name": "calc", "arguments": '{"expr": "2+2"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_2_0", "content": "4"},
    ]
    shards.close()


def _as_messages(traj: traces.Trajectory) -> dict:
    """A trajectory written out as one openai-messages record (the inverse of the reader)."""
    messages: list[dict] = [{"role": "system", "content": traj.system}] if traj.system else []
    for row in traj.rows:
        if row.role == "tool":
            for k, res in enumerate(row.tool_results or ()):
                msg = {"role": "tool", **res}
                if k == 0 and row.delay_seconds is not None:
                    msg["delay_seconds"] = row.delay_seconds
                messages.append(msg)
            continue
        msg = {"role": row.role}
        for key in ("content", "reasoning_content", "name", "delay_seconds"):
            if getattr(row, key) is not None:
                msg[key] = getattr(row, key)
        if row.tool_calls:
            msg["tool_calls"] = list(row.tool_calls)
        messages.append(msg)
    return {"conversation_id": traj.id, "messages": messages, "tools": list(traj.rows[0].tools or ())}


def test_real_coding_trajectories_survive_the_message_form(coding20: Path, tmp_path: Path) -> None:
    """The 20 real trajectories, as OpenAI messages, read back to the same rows and shards."""
    official = list(FORMATS["mlperf-jsonl"].read(str(coding20), raising_sink))
    path = tmp_path / "coding20.messages.jsonl"
    path.write_text("".join(json.dumps(_as_messages(t)) + "\n" for t in official))
    trajs, errors = _read(path)
    assert errors == []
    assert [t.id for t in trajs] == [t.id for t in official]
    assert sum(len(t.client_indices()) for t in trajs) == 1007
    for mine, ref in zip(trajs, official):
        assert mine.rows == ref.rows
    a = traces.build_shards([str(coding20)], tmp_path / "a", traces.BuildOptions(name="c"))
    b = traces.build_shards([str(path)], tmp_path / "b", traces.BuildOptions(format="openai-messages", name="c"))
    assert a.manifest.content_hash == b.manifest.content_hash
