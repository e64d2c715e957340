"""Every input format of `traces.FORMATS`: one parametrised suite with golden outputs, then what
is particular to each format.

Test data: `tests/data/formats/<format>/` (see the README there) holds the valid inputs
(`good/`, read in name order), an input that breaks one rule per conversation (`bad.*`), and two
golden files: `expected.jsonl`, the official flat rows the valid inputs convert to (the
mlperf-jsonl writer's bytes), and `bad.errors.txt`, the errors the broken input reports, with
file, line or JSON path, conversation and rule. Both are compared byte for byte;
`TRAJBENCH_UPDATE_GOLDEN=1 pytest tests/traces/test_formats.py` rewrites them from the readers'
current output (review the diff before committing it).
"""

from __future__ import annotations

import importlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from sinks import raising_sink

import traces
from traces.formats import FORMATS
from traces.formats.mini_swe_agent import BASH_TOOL
from traces.formats.mlperf_jsonl import to_records as trajectory_to_flat

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"
NAMES = list(FORMATS)
WRITABLE = [name for name, fmt in FORMATS.items() if fmt.to_records is not None]

#: conversations of a broken input that break no rule, so still load
STILL_LOADS = {"snapshots": ["sim_010"]}
#: the error an empty file gives
LINES = "; expected one JSON object per line"
EMPTY = {
    "mlperf-jsonl": "the file holds no data rows" + LINES + " (or one table row per message)",
    "snapshots": "the file holds no snapshots" + LINES,
    "mini-swe-agent": "the file holds no trajectories",
    "atif": "the file holds no trajectories",
    "workflow": "the file holds no conversations" + LINES,
    "openai-messages": "the file holds no conversations" + LINES,
}


# ---------------------------------------------------------------- helpers
def good_inputs(name: str) -> list[Path]:
    return sorted((DATA / name / "good").iterdir())


def bad_input(name: str) -> Path:
    (path,) = (p for p in (DATA / name).glob("bad.*") if p.suffix in (".json", ".jsonl"))
    return path


def read(name: str, *paths: Path) -> tuple[list[traces.Trajectory], list[str]]:
    """The trajectories `name`'s reader yields for `paths`, and the errors it reports."""
    errors: list[traces.TraceFormatError] = []
    trajs = [t for p in paths for t in FORMATS[name].read(str(p), errors.append)]
    return trajs, [str(e) for e in errors]


def flat_bytes(trajs: list[traces.Trajectory], tmp_path: Path) -> str:
    """What the mlperf-jsonl writer writes for `trajs`."""
    out = tmp_path / "flat.jsonl"
    write = FORMATS["mlperf-jsonl"].write
    assert write is not None
    write(trajs, str(out))
    return out.read_bytes().decode("utf-8")


def check_golden(path: Path, produced: str) -> None:
    """`produced` must equal the golden file byte for byte; TRAJBENCH_UPDATE_GOLDEN=1 rewrites it."""
    if os.environ.get("TRAJBENCH_UPDATE_GOLDEN"):
        path.write_bytes(produced.encode("utf-8"))
    assert path.is_file(), f"{path} is missing: run TRAJBENCH_UPDATE_GOLDEN=1 pytest tests/traces/test_formats.py"
    assert path.read_bytes().decode("utf-8") == produced, (
        f"{path.relative_to(DATA)} differs from the output; if the change is intended, rerun with "
        "TRAJBENCH_UPDATE_GOLDEN=1 and review the diff"
    )


def counts(trajs: list[traces.Trajectory]) -> dict[str, int]:
    """The manifest counts of one repeat of `trajs`, counted from the trajectories."""
    return {
        "trajectories": len(trajs),
        "instances": len(trajs),
        "client_turns": sum(len(t.client_indices()) for t in trajs),
    }


def prompts_of(shards_dir: Path, trajectory_id: str, **kw: Any) -> list[traces.TurnPrompt]:
    shards = traces.Shards(shards_dir)
    try:
        return list(traces.iter_prompts(shards.find(trajectory_id), **kw))
    finally:
        shards.close()


def build(name: str, out: Path) -> traces.BuildResult:
    return traces.build_shards([str(p) for p in good_inputs(name)], out, traces.BuildOptions(format=name, name=name))


# ---------------------------------------------------------------- every format
def test_every_format_has_test_data() -> None:
    assert sorted(p.name for p in DATA.iterdir() if p.is_dir()) == sorted(NAMES)
    assert set(EMPTY) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_registered_under_its_name(name: str) -> None:
    fmt = FORMATS[name]
    module = importlib.import_module(f"traces.formats.{name.replace('-', '_')}")
    assert fmt.name == name and fmt.description
    assert fmt.read is module.read
    assert (fmt.to_records is None) == (fmt.from_records is None) == (fmt.read_only is not None)


@pytest.mark.parametrize("name", NAMES)
def test_valid_inputs_give_the_golden_flat_rows(name: str, tmp_path: Path) -> None:
    trajs, errors = read(name, *good_inputs(name))
    assert errors == [] and trajs
    check_golden(DATA / name / "expected.jsonl", flat_bytes(trajs, tmp_path))


@pytest.mark.parametrize("name", NAMES)
def test_the_golden_reads_back_to_the_same_trajectories(name: str, tmp_path: Path) -> None:
    """Nothing is lost on the way to the flat rows, and the writer's output is its own fixed point."""
    trajs = read(name, *good_inputs(name))[0]
    golden = DATA / name / "expected.jsonl"
    again = list(FORMATS["mlperf-jsonl"].read(str(golden), raising_sink))
    assert again == trajs
    assert flat_bytes(again, tmp_path) == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_shards_built_from_the_format_export_the_golden(name: str, tmp_path: Path) -> None:
    trajs = read(name, *good_inputs(name))[0]
    result = build(name, tmp_path / "a")
    assert traces.to_json(result.manifest.counts) == counts(trajs)
    exported = traces.export_shards(str(result.out), str(tmp_path / "export.jsonl"))
    assert exported.records == sum(len(t.rows) for t in trajs)
    assert (tmp_path / "export.jsonl").read_bytes() == (DATA / name / "expected.jsonl").read_bytes()
    assert build(name, tmp_path / "b").manifest.content_hash == result.manifest.content_hash


@pytest.mark.parametrize("name", NAMES)
def test_broken_input_reports_each_error_with_location_and_rule(name: str) -> None:
    path = bad_input(name)
    trajs, errors = read(name, path)
    assert [t.id for t in trajs] == STILL_LOADS.get(name, [])  # the other conversations still load
    shown = [e.replace(f"{DATA}{os.sep}", "") for e in errors]
    check_golden(DATA / name / "bad.errors.txt", "".join(f"{e}\n" for e in shown))
    where = re.escape(f"{name}/{path.name}")
    assert len(shown) > 1 and all(re.match(rf"{where}(:\d+)?( \([^)]+\))?: \S", e) for e in shown), shown
    assert all("conversation" in e or "JSON" in e for e in shown)  # each names its conversation or the parse


@pytest.mark.parametrize("name", NAMES)
def test_an_empty_file_is_an_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    assert read(name, path) == ([], [f"{path}: {EMPTY[name]}"])


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("name", NAMES)
def test_text_that_is_not_json_is_an_error(name: str, suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"x{suffix}"
    path.write_text("{not json")
    trajs, errors = read(name, path)
    assert trajs == []
    if suffix == ".json" and name != "mlperf-jsonl":  # a .json file is one document (mlperf-jsonl: lines)
        assert errors[0].startswith(f"{path}: not valid JSON") and "must hold one JSON document" in errors[0]
    else:
        assert errors[0].startswith(f"{path}:1: not valid JSON") and "each line must be one JSON object" in errors[0]


@pytest.mark.parametrize("name", WRITABLE)
def test_write_then_read_round_trips_deterministically(name: str, tmp_path: Path) -> None:
    fmt = FORMATS[name]
    trajs = read(name, *good_inputs(name))[0]
    out = tmp_path / "out.jsonl.zst"
    # conversations for the formats of one record per conversation, else flat rows
    written = len(trajs) if name in ("workflow", "openai-messages") else sum(len(t.rows) for t in trajs)
    assert fmt.write(trajs, str(out)) == written
    again, errors = read(name, out)
    assert errors == [] and again == trajs
    fmt.write(again, str(tmp_path / "a.jsonl"))
    fmt.write(trajs, str(tmp_path / "b.jsonl"))
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


# ---------------------------------------------------------------- mlperf-jsonl
def test_mlperf_jsonl_skips_metadata_and_keeps_params_and_unknown_fields() -> None:
    (src,) = good_inputs("mlperf-jsonl")
    assert json.loads(src.read_text().splitlines()[0])["_type"] == "dataset_metadata"
    coding, flow = read("mlperf-jsonl", src)[0]
    call, answer = coding.rows[1], coding.rows[3]
    assert dict(call.params) == {"temperature": 0.6, "max_tokens": 512} and dict(call.extra) == {}
    assert dict(answer.extra) == {"x_review": {"by": "ana", "ok": True}}
    assert (coding.domain, flow.domain) == ("coding", "workflow")
    assert flow.rows[-1].role == "user" and flow.answer_after(len(flow.rows) - 1) is None  # ends on a client turn
    assert flow.rows[2].delay_seconds == 6.0


# ---------------------------------------------------------------- snapshots
def test_snapshots_keep_the_last_snapshot_sorted_by_id() -> None:
    trajs, errors = read("snapshots", *good_inputs("snapshots"))
    assert errors == []
    assert [t.id for t in trajs] == ["sim_001", "sim_002"]
    assert [len(t.rows) for t in trajs] == [6, 2]  # sim_001's idx 2 snapshot, sim_002's idx 1


def test_snapshots_rows_field_by_field() -> None:
    sim1 = read("snapshots", *good_inputs("snapshots"))[0][0]
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
    assert call.tool_calls is not None
    assert json.loads(call.tool_calls[1]["function"]["arguments"]) == {"account_id": "A-17"}  # dict serialised
    # parallel tool results: one row, the longest delay
    assert tool.role == "tool" and tool.turn == 3
    assert [r["tool_call_id"] for r in tool.tool_results or ()] == ["c1", "c2"]
    assert tool.delay_seconds == 0.7
    assert answer.intent_codes == ("I031",)
    assert sim1.rows[4].delay_seconds == 4.0


def test_snapshots_flat_rows_carry_no_snapshot_fields() -> None:
    sim1 = read("snapshots", *good_inputs("snapshots"))[0][0]
    flat = trajectory_to_flat(sim1)
    assert [r["role"] for r in flat] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert all("metadata" not in r and "conversation_idx" not in r for r in flat)


def test_snapshots_line_order_does_not_matter(tmp_path: Path) -> None:
    (src,) = good_inputs("snapshots")
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(reversed(src.read_text().splitlines())) + "\n")
    assert read("snapshots", shuffled) == read("snapshots", src)


def test_snapshots_shards_prompts(tmp_path: Path) -> None:
    prompts = prompts_of(build("snapshots", tmp_path / "out").out, "sim_001", markers=False)
    assert [p.row.turn for p in prompts] == [1, 3, 5]
    assert [p.row.intent_codes for p in prompts] == [["I012"], ["I031"], ["I099"]]
    assert [m["role"] for m in prompts[1].messages] == ["system", "user", "assistant", "tool", "tool"]
    assert prompts[1].row.delay_seconds == pytest.approx(0.7)


# ---------------------------------------------------------------- mini-swe-agent
def _command(call: dict[str, Any]) -> str:
    return str(json.loads(call["function"]["arguments"])["command"])


def test_mini_swe_agent_text_actions_become_bash_tool_calls() -> None:
    (traj,), errors = read("mini-swe-agent", DATA / "mini-swe-agent" / "good" / "acme__widgets-101.traj.json")
    assert errors == []
    assert traj.id == "acme__widgets-101"  # from the file name: v1 files carry no instance_id
    assert (
        traj.system == "You are a helpful assistant that can interact with a computer shell to solve programming tasks."
    )
    assert [r.role for r in traj.rows] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    first = traj.rows[0]
    assert first.tools == (BASH_TOOL,)
    act, obs = traj.rows[1], traj.rows[2]
    assert act.content == "THOUGHT: Find where resize is defined."  # code block moved into the call
    assert act.tool_calls is not None and len(act.tool_calls) == 1
    assert act.tool_calls[0]["id"] == "call_2_0" and act.tool_calls[0]["function"]["name"] == "bash"
    assert _command(act.tool_calls[0]) == "grep -rn 'def resize' src/"
    assert obs.turn == 3 and obs.tool_results == (
        {
            "tool_call_id": "call_2_0",
            "content": "<returncode>0</returncode>\n<output>\nsrc/widgets/base.py:88:    def resize(self, w, h):\n</output>",
        },
    )
    # two code blocks: mini-swe-agent executed nothing and answered with a format error
    assert traj.rows[3].tool_calls is None and "```bash\nls\n```" in (traj.rows[3].content or "")
    assert traj.rows[4].role == "user" and (traj.rows[4].content or "").startswith(
        "Please always provide EXACTLY ONE action"
    )
    final = traj.rows[7].tool_calls
    assert final is not None and _command(final[0]) == "echo MINI_SWE_AGENT_FINAL_OUTPUT && git diff"


def test_mini_swe_agent_tool_calling_run_keeps_ids_reasoning_and_timing() -> None:
    (traj,), errors = read("mini-swe-agent", DATA / "mini-swe-agent" / "good" / "toolcall_run.traj.json")
    assert errors == []
    assert traj.id == "acme__parser-7"  # its instance_id, not the file name
    assert len(traj.rows) == 5  # the `exit` message is not a turn
    call = traj.rows[1]
    assert call.content is None and call.reasoning_content == "Look at the parser and its tests."
    assert [c["id"] for c in call.tool_calls or ()] == ["toolu_1", "toolu_2"]
    assert call.extra == {} and call.params == {}  # litellm's function_call/extra are not carried
    tools = traj.rows[2]
    assert [r["tool_call_id"] for r in tools.tool_results or ()] == ["toolu_1", "toolu_2"]
    assert tools.delay_seconds == 0.5  # parallel results: the later one's time after the answer
    assert traj.rows[4].delay_seconds == 1.5


def test_mini_swe_agent_shards_prompts(tmp_path: Path) -> None:
    prompts = prompts_of(build("mini-swe-agent", tmp_path / "out").out, "acme__widgets-101", markers=False)
    assert [p.row.turn for p in prompts] == [1, 3, 5, 7, 9]
    assert prompts[0].row.domain == "coding" and prompts[0].tools == [BASH_TOOL]
    assert prompts[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_2_0",
        "content": prompts[1].row.delta[-1]["tool_results"][0]["content"],
    }
    assert json.loads(prompts[0].row.expected_json or "null")["tool_calls"][0]["id"] == "call_2_0"


# ---------------------------------------------------------------- atif
def _atif() -> traces.Trajectory:
    (traj,), errors = read("atif", *good_inputs("atif"))
    assert errors == []
    return traj


def test_atif_steps_become_rows_field_by_field() -> None:
    traj = _atif()
    assert traj.id == "acme__widgets-202"
    assert [r.role for r in traj.rows] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    first, call, obs = traj.rows[:3]
    assert first.system is not None and first.system.startswith("You are a helpful assistant")
    assert first.tools == (BASH_TOOL,)  # ATIF has no tool list; bash gets mini-swe-agent's
    assert first.delay_seconds is None
    assert call.content is None and call.reasoning_content == "Find the code and the tests."
    assert [(c["id"], c["type"], c["function"]["name"]) for c in call.tool_calls or ()] == [
        ("call_a", "function", "bash"),
        ("call_b", "function", "bash"),
    ]
    assert call.tool_calls is not None
    assert json.loads(call.tool_calls[0]["function"]["arguments"]) == {"command": "grep -rn 'def resize' src/"}
    # results keep their source order and ids; the delay runs to the next step's timestamp
    assert obs.tool_results == (
        {"tool_call_id": "call_b", "content": "test_resize.py"},
        {"tool_call_id": "call_a", "content": "src/widgets/base.py:88"},
    )
    assert obs.delay_seconds == 3.5


def test_atif_text_action_and_user_think_time() -> None:
    traj = _atif()
    act, obs = traj.rows[3], traj.rows[4]
    assert act.content == "THOUGHT: patch it."
    assert act.tool_calls is not None and act.tool_calls[0]["id"] == "call_4_0"
    assert _command(act.tool_calls[0]).startswith("sed -i")
    assert obs.tool_results == ({"tool_call_id": "call_4_0", "content": "<returncode>0</returncode>"},)
    assert obs.delay_seconds == 1.5
    assert traj.rows[6].content == "No, that's all." and traj.rows[6].delay_seconds == 12.0


def test_atif_observation_without_action_is_fed_back_as_user(tmp_path: Path) -> None:
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": "s-obs",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "system", "message": "sys"},
            {"step_id": 2, "source": "user", "message": "go"},
            {
                "step_id": 3,
                "source": "agent",
                "message": "thinking",
                "observation": {"results": [{"content": "feedback"}]},
            },
            {"step_id": 4, "source": "agent", "message": "done"},
        ],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    (traj,), errors = read("atif", path)
    assert errors == []
    assert [(r.role, r.content) for r in traj.rows] == [
        ("user", "go"),
        ("assistant", "thinking"),
        ("user", "feedback"),
        ("assistant", "done"),
    ]
    assert traj.rows[0].tools is None


def test_atif_jsonl_of_trajectories_names_lines(tmp_path: Path) -> None:
    (src,) = good_inputs("atif")
    good = json.loads(src.read_text())
    late_system = {
        **good,
        "session_id": "s-late",
        "steps": [*good["steps"], {"step_id": 8, "source": "system", "message": "new rules"}],
    }
    path = tmp_path / "many.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(late_system) + "\n")
    trajs, errors = read("atif", path)
    assert [t.id for t in trajs] == ["acme__widgets-202"]
    assert errors == [
        f"{path}:2 (steps[7]): conversation s-late: only one system message is supported, and it must come first (docs/dataset-format.md: one system prompt per trajectory)"
    ]


def test_atif_shards_prompts(tmp_path: Path) -> None:
    prompts = prompts_of(build("atif", tmp_path / "out").out, "acme__widgets-202", markers=False)
    assert [(p.row.turn, p.row.delay_seconds) for p in prompts] == [(1, 0.0), (3, 3.5), (5, 1.5), (7, 12.0)]
    assert [m["role"] for m in prompts[1].messages] == ["system", "user", "assistant", "tool", "tool"]


# ---------------------------------------------------------------- workflow
def test_workflow_reads_conversations_in_file_order() -> None:
    trajs, errors = read("workflow", *good_inputs("workflow"))
    assert errors == []
    assert [(t.id, t.domain, len(t.rows)) for t in trajs] == [("sim_001", "workflow", 6), ("sim_002", "workflow", 3)]


def test_workflow_rows_field_by_field() -> None:
    sim1, sim2 = read("workflow", *good_inputs("workflow"))[0]
    first = sim1.rows[0]
    assert (first.turn, first.role, first.content) == (1, "user", "Hi, my bill is wrong.\n\nPhone 555-0100.")
    assert first.system == sim1.system and (sim1.system or "").startswith("You are the support agent")
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


def test_workflow_write_refuses_what_the_format_cannot_hold(sample: Path) -> None:
    from traces.formats.workflow import to_record

    coding = next(FORMATS["mlperf-jsonl"].read(str(sample), lambda e: None))
    with pytest.raises(traces.TraceError, match="ids like sim_NNN"):
        to_record(coding)


def test_workflow_shards_prompts(tmp_path: Path) -> None:
    prompts = prompts_of(build("workflow", tmp_path / "out").out, "sim_002")
    assert [p.row.turn for p in prompts] == [1, 3]
    assert prompts[0].row.domain == "workflow" and prompts[0].row.intent_codes == ["I005"]
    last = prompts[1].messages
    assert last[0]["content"].startswith("[salt: ") and last[2] == {
        "role": "assistant",
        "content": "Please  confirm your phone number. intent: I005",
    }
    assert prompts[1].tools is not None and len(prompts[1].tools) == 2


def test_workflow_data_card_front_matter_and_example(tmp_path: Path) -> None:
    import yaml

    card = (Path(__file__).resolve().parents[3] / "data_cards" / "workflow-format.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---\n")[1])
    assert (front["name"], front["kind"], front["version"]) == ("workflow", "format", 1)
    example, rows = re.findall(r"```json\n(.*?)```", card, re.DOTALL)[:2]
    path = tmp_path / "example.jsonl"
    path.write_text(json.dumps(json.loads(example)) + "\n")
    (traj,), errors = read("workflow", path)
    assert errors == []
    flat = trajectory_to_flat(traj)
    assert {"system", "tools"} <= set(flat[0])
    for row in flat:
        row.pop("system", None)
        row.pop("tools", None)
    assert flat == [json.loads(line) for line in rows.splitlines()]


# ---------------------------------------------------------------- openai-messages
def test_openai_messages_reads_one_conversation_per_line() -> None:
    trajs, errors = read("openai-messages", *good_inputs("openai-messages"))
    assert errors == []
    assert [t.id for t in trajs] == ["chat-1", "chats-L2"]  # no id: file stem + line


def test_openai_messages_rows_field_by_field() -> None:
    chat = read("openai-messages", *good_inputs("openai-messages"))[0][0]
    user, call, tool, answer = chat.rows
    assert (user.turn, user.role, user.content, user.system) == (
        1,
        "user",
        "What is 2+2?Use the tool.",
        "You are helpful.",
    )
    assert user.tools is not None and user.tools[0]["function"]["name"] == "calc"
    # empty text beside a tool call is omitted (docs/requests.md); the missing id is generated
    assert call.content is None
    assert call.tool_calls == (
        {"id": "call_2_0", "type": "function", "function": {"name": "calc", "arguments": '{"expr": "2+2"}'}},
    )
    # a tool message without tool_call_id answers the call at its position
    assert tool.tool_results == ({"tool_call_id": "call_2_0", "content": "4"},)
    assert (answer.content, answer.reasoning_content) == ("4", "The tool said 4.")  # `reasoning` alias


def test_openai_messages_json_document_array_is_accepted(tmp_path: Path) -> None:
    (src,) = good_inputs("openai-messages")
    records = [json.loads(line) for line in src.read_text().splitlines()]
    path = tmp_path / "convs.json"
    path.write_text(json.dumps(records))
    trajs, errors = read("openai-messages", path)
    assert errors == [] and [t.id for t in trajs] == ["chat-1", "convs-1"]
    assert trajs[0].rows == read("openai-messages", src)[0][0].rows


def test_openai_messages_converter_merges_and_keeps_fields() -> None:
    from traces.formats.openai_messages import convert_messages

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


def test_openai_messages_text_content_and_file_stem() -> None:
    from traces.formats.openai_messages import file_stem, text_content

    assert text_content([{"type": "text", "text": "a"}, "b"]) == "ab"  # joined as chat templates join text parts
    with pytest.raises(ValueError, match="only text parts"):
        text_content([{"type": "input_audio"}])
    assert file_stem("x/django__django-1.traj.json.zst") == "django__django-1"


def test_openai_messages_shards_prompts(tmp_path: Path) -> None:
    prompts = prompts_of(build("openai-messages", tmp_path / "out").out, "chat-1", markers=False)
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


def _as_messages(traj: traces.Trajectory) -> dict[str, Any]:
    """A trajectory written out as one openai-messages record (the inverse of the reader)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": traj.system}] if traj.system else []
    for row in traj.rows:
        if row.role == "tool":
            for k, res in enumerate(row.tool_results or ()):
                msg = {"role": "tool", **res}
                if k == 0 and row.delay_seconds is not None:
                    msg["delay_seconds"] = row.delay_seconds
                messages.append(msg)
            continue
        msg = {"role": row.role}
        for key in ("content", "reasoning_content", "name", "delay_seconds", "intent_codes"):
            if getattr(row, key) is not None:
                msg[key] = getattr(row, key)
        if row.tool_calls:
            msg["tool_calls"] = list(row.tool_calls)
        messages.append(msg)
    return {"conversation_id": traj.id, "messages": messages, "tools": list(traj.rows[0].tools or ())}


@pytest.mark.parametrize("source", ["coding_set", "sample"])
def test_openai_messages_trajectories_survive_the_message_form(
    source: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Trajectories written as OpenAI messages read back to the same rows and the same prompts."""
    src: Path = request.getfixturevalue(source)
    official = list(FORMATS["mlperf-jsonl"].read(str(src), raising_sink))
    path = tmp_path / "messages.jsonl"
    path.write_text("".join(json.dumps(_as_messages(t)) + "\n" for t in official))
    trajs, errors = read("openai-messages", path)
    assert errors == []
    assert [t.id for t in trajs] == [t.id for t in official] and len(trajs) > 1
    assert counts(trajs) == counts(official)
    for mine, ref in zip(trajs, official, strict=True):
        assert mine.rows == ref.rows
    a = traces.build_shards([str(src)], tmp_path / "a", traces.BuildOptions(name="c"))
    b = traces.build_shards([str(path)], tmp_path / "b", traces.BuildOptions(format="openai-messages", name="c"))
    sa, sb = traces.Shards(a.out), traces.Shards(b.out)
    for ia, ib in zip(sa, sb, strict=True):
        for pa, pb in zip(traces.iter_prompts(ia), traces.iter_prompts(ib), strict=True):
            assert (pa.messages, pa.tools) == (pb.messages, pb.tools)  # as JSON values
    sa.close()
    sb.close()
    if source == "sample":
        # byte for byte too: the sample's tool calls are in the reader's key order (id, type,
        # function); the synthetic set's, written with sorted keys, are not, and shards keep key order
        assert a.manifest.content_hash == b.manifest.content_hash
