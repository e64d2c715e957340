"""The `snapshots` reader: last snapshot per id, merges, kept fields, errors, shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import traces
from traces.formats import FORMATS
from traces.formats.mlperf_jsonl import trajectory_to_flat
from traces.formats.snapshots import read

DATA = Path(__file__).parent / "data" / "formats"
GOOD = DATA / "snapshots_good.jsonl"


def _read(path: Path) -> tuple[list[traces.Trajectory], list[str]]:
    errors: list[traces.TraceFormatError] = []
    return list(read(str(path), errors.append)), [str(e) for e in errors]


def test_keeps_last_snapshot_sorted_by_id() -> None:
    trajs, errors = _read(GOOD)
    assert errors == []
    assert [t.id for t in trajs] == ["sim_001", "sim_002"]
    assert [len(t.rows) for t in trajs] == [6, 2]  # sim_001's idx 2 snapshot, sim_002's idx 1


def test_rows_field_by_field() -> None:
    sim1 = _read(GOOD)[0][0]
    first, call, tool, answer = sim1.rows[:4]
    # two consecutive user messages become one row, joined by a blank line, delays summed
    assert (first.turn, first.role) == (1, "user")
    assert first.content == "Hi, my bill is wrong.\n\nPhone 555-0100."
    assert first.delay_seconds == 2.5
    assert first.name is None  # the first message's name wins (it had none)
    assert first.system is not None and first.system.startswith("You are the support agent")
    assert [t["function"]["name"] for t in first.tools or ()] == ["lookup_account", "list_bills"]
    # reasoning, intent codes and tool calls survive (the reference converter drops the first two)
    assert call.role == "assistant" and call.content is None
    assert call.reasoning_content == "Look the account up and list bills in parallel."
    assert call.intent_codes == ("I012",)
    assert [c["id"] for c in call.tool_calls or ()] == ["c1", "c2"]
    assert json.loads(call.tool_calls[1]["function"]["arguments"]) == {"account_id": "A-17"}  # dict serialised
    # parallel tool results: one row, the longest delay
    assert tool.role == "tool" and tool.turn == 3
    assert [r["tool_call_id"] for r in tool.tool_results or ()] == ["c1", "c2"]
    assert tool.delay_seconds == 0.7
    assert answer.intent_codes == ("I031",)
    assert sim1.rows[4].delay_seconds == 4.0


def test_same_output_as_flat_rows_expected(tmp_path: Path) -> None:
    sim1 = _read(GOOD)[0][0]
    flat = trajectory_to_flat(sim1)
    assert [r["role"] for r in flat] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert all("metadata" not in r and "conversation_idx" not in r for r in flat)


def test_broken_file_reports_each_error_with_location_and_rule() -> None:
    trajs, errors = _read(DATA / "snapshots_bad.jsonl")
    assert [t.id for t in trajs] == ["sim_010"]  # the good conversation still loads
    expected = [
        "snapshots_bad.jsonl:2: each line must be a JSON object, got str",
        "snapshots_bad.jsonl:3 (conversation_idx): conversation sim_011: conversation_idx must be an integer",
        "snapshots_bad.jsonl:6: not valid JSON",
        "snapshots_bad.jsonl:4 (messages[1]): conversation sim_012 turn 1: an assistant row cannot come as the first row",
        "snapshots_bad.jsonl:5 (messages[2]): conversation sim_013: role must be system, user, assistant or tool; got 'robot'",
    ]
    assert len(errors) == len(expected)
    for want, got in zip(expected, errors):
        assert want in got


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    trajs, errors = _read(path)
    assert trajs == [] and "holds no snapshots" in errors[0]


def test_registered_and_builds_shards(tmp_path: Path) -> None:
    assert FORMATS["snapshots"].read is read
    result = traces.build_shards([str(GOOD)], tmp_path / "out", traces.BuildOptions(format="snapshots", name="snap"))
    assert traces.to_json(result.manifest.counts) == {"trajectories": 2, "instances": 2, "client_turns": 4}
    shards = traces.Shards(tmp_path / "out")
    inst = shards.find("sim_001")
    prompts = list(traces.iter_prompts(inst, markers=False))
    assert [p.row.turn for p in prompts] == [1, 3, 5]
    assert [p.row.intent_codes for p in prompts] == [["I012"], ["I031"], ["I099"]]
    assert [m["role"] for m in prompts[1].messages] == ["system", "user", "assistant", "tool", "tool"]
    assert prompts[1].row.delay_seconds == pytest.approx(0.7)
    shards.close()


def test_line_order_does_not_matter(tmp_path: Path) -> None:
    lines = GOOD.read_text().splitlines()
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(reversed(lines)) + "\n")
    assert _read(shuffled) == _read(GOOD)
