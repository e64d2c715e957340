"""The `workflow` format: reading, strict record checks, writing, round trip, shards."""

from __future__ import annotations

from pathlib import Path

import pytest

import traces
from traces.formats import FORMATS
from traces.formats.workflow import read, to_record, write

DATA = Path(__file__).parent / "data" / "formats"
GOOD = DATA / "workflow_good.jsonl"


def _read(path: Path) -> tuple[list[traces.Trajectory], list[str]]:
    errors: list[traces.TraceFormatError] = []
    return list(read(str(path), errors.append)), [str(e) for e in errors]


def test_reads_conversations_in_file_order() -> None:
    trajs, errors = _read(GOOD)
    assert errors == []
    assert [(t.id, t.domain, len(t.rows)) for t in trajs] == [("sim_001", "workflow", 6), ("sim_002", "workflow", 3)]


def test_rows_field_by_field() -> None:
    sim1, sim2 = _read(GOOD)[0]
    first = sim1.rows[0]
    assert (first.turn, first.role, first.content) == (1, "user", "Hi, my bill is wrong.\n\nPhone 555-0100.")
    assert first.system == sim1.system and sim1.system.startswith("You are the support agent")
    assert first.tools is not None and len(first.tools) == 2
    assert first.delay_seconds == 2.5
    tool = sim1.rows[2]
    assert tool.role == "tool" and tool.delay_seconds == 0.7
    assert tool.tool_results == (
        {"tool_call_id": "c1", "content": '{"account_id": "A-17"}'},
        {"tool_call_id": "c2", "content": '[{"month": "2026-10", "amount": 120}]'},
    )
    assert sim1.rows[3].intent_codes == ("I031",)
    assert sim2.rows[2].delay_seconds == 6.0  # an int delay is read as float


def test_broken_records_name_location_and_rule() -> None:
    trajs, errors = _read(DATA / "workflow_bad.jsonl")
    assert trajs == []
    expected = [
        "workflow_bad.jsonl:1 (conversation_id): conversation_id must look like sim_NNN",
        "workflow_bad.jsonl:2 (system): conversation sim_020: system must be a non-empty string",
        "workflow_bad.jsonl:3 (messages[1].intent_codes): conversation sim_021: intent_codes must be a list of codes like 'I042'",
        "workflow_bad.jsonl:4 (messages[0]): conversation sim_022: the system prompt belongs in the top-level `system` field",
        "workflow_bad.jsonl:5 (messages[2]): conversation sim_023 turn 3: a tool row must follow an assistant row with tool_calls",
        "workflow_bad.jsonl:6 (notes): conversation sim_024: unknown field(s) notes",
    ]
    assert len(errors) == len(expected)
    for want, got in zip(expected, errors):
        assert want in got


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    trajs = _read(GOOD)[0]
    out = tmp_path / "wf.jsonl.zst"
    assert write(trajs, str(out)) == 2
    again, errors = _read(out)
    assert errors == []
    assert again == trajs
    # and writing is deterministic
    out2 = tmp_path / "wf2.jsonl"
    write(again, str(out2))
    write(trajs, str(tmp_path / "wf3.jsonl"))
    assert out2.read_bytes() == (tmp_path / "wf3.jsonl").read_bytes()


def test_write_refuses_what_the_format_cannot_hold(sample: Path) -> None:
    coding = next(FORMATS["mlperf-jsonl"].read(str(sample), lambda e: None))
    with pytest.raises(traces.TraceError, match="ids like sim_NNN"):
        to_record(coding)


def test_registered_and_builds_shards(tmp_path: Path) -> None:
    fmt = FORMATS["workflow"]
    assert fmt.read is read and fmt.write is write
    result = traces.build_shards([str(GOOD)], tmp_path / "out", traces.BuildOptions(format="workflow", name="wf"))
    assert traces.to_json(result.manifest.counts) == {"trajectories": 2, "instances": 2, "client_turns": 5}
    shards = traces.Shards(tmp_path / "out")
    prompts = list(traces.iter_prompts(shards.find("sim_002")))
    assert [p.row.turn for p in prompts] == [1, 3]
    assert prompts[0].row.domain == "workflow" and prompts[0].row.intent_codes == ["I005"]
    last = prompts[1].messages
    assert last[0]["content"].startswith("[salt: ") and last[2] == {
        "role": "assistant",
        "content": "Please  confirm your phone number. intent: I005",
    }
    assert prompts[1].tools is not None and len(prompts[1].tools) == 2
    shards.close()


def test_data_card_front_matter_and_example(tmp_path: Path) -> None:
    import json
    import re

    import yaml

    card = (Path(__file__).resolve().parents[2] / "data_cards" / "workflow-format.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---\n")[1])
    assert (front["name"], front["kind"], front["version"]) == ("workflow", "format", 1)
    example, rows = re.findall(r"```json\n(.*?)```", card, re.DOTALL)[:2]
    path = tmp_path / "example.jsonl"
    path.write_text(json.dumps(json.loads(example)) + "\n")
    (traj,), errors = _read(path)
    assert errors == []
    from traces.formats.mlperf_jsonl import trajectory_to_flat

    flat = trajectory_to_flat(traj)
    assert {"system", "tools"} <= set(flat[0])
    for row in flat:
        row.pop("system", None)
        row.pop("tools", None)
    assert flat == [json.loads(line) for line in rows.splitlines()]
