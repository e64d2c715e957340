"""The `atif` reader: steps to rows, observations, text actions, timestamp delays, errors."""

from __future__ import annotations

import json
from pathlib import Path

import traces
from traces.formats import FORMATS
from traces.formats.atif import read
from traces.formats.mini_swe_agent import BASH_TOOL

DATA = Path(__file__).parent / "data" / "formats"
GOOD = DATA / "atif_good.json"


def _read(path: Path) -> tuple[list[traces.Trajectory], list[str]]:
    errors: list[traces.TraceFormatError] = []
    return list(read(str(path), errors.append)), [str(e) for e in errors]


def test_steps_become_rows_field_by_field() -> None:
    (traj,), errors = _read(GOOD)
    assert errors == []
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
    assert json.loads(call.tool_calls[0]["function"]["arguments"]) == {"command": "grep -rn 'def resize' src/"}
    # results keep their source order and ids; the delay runs to the next step's timestamp
    assert obs.tool_results == (
        {"tool_call_id": "call_b", "content": "test_resize.py"},
        {"tool_call_id": "call_a", "content": "src/widgets/base.py:88"},
    )
    assert obs.delay_seconds == 3.5


def test_text_action_and_user_think_time() -> None:
    traj = _read(GOOD)[0][0]
    act, obs = traj.rows[3], traj.rows[4]
    assert act.content == "THOUGHT: patch it."
    assert act.tool_calls is not None and act.tool_calls[0]["id"] == "call_4_0"
    assert json.loads(act.tool_calls[0]["function"]["arguments"])["command"].startswith("sed -i")
    assert obs.tool_results == ({"tool_call_id": "call_4_0", "content": "<returncode>0</returncode>"},)
    assert obs.delay_seconds == 1.5
    assert traj.rows[6].content == "No, that's all." and traj.rows[6].delay_seconds == 12.0


def test_observation_without_action_is_fed_back_as_user(tmp_path: Path) -> None:
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
    (traj,), errors = _read(path)
    assert errors == []
    assert [(r.role, r.content) for r in traj.rows] == [
        ("user", "go"),
        ("assistant", "thinking"),
        ("user", "feedback"),
        ("assistant", "done"),
    ]
    assert traj.rows[0].tools is None


def test_broken_trajectories_name_location_and_rule() -> None:
    trajs, errors = _read(DATA / "atif_bad.json")
    assert trajs == []
    expected = [
        "atif_bad.json ([0].schema_version): conversation s-1: unknown schema_version 'ATIF-v2.0'",
        "atif_bad.json ([1].steps[1].source): conversation s-2: source must be system, user or agent; got 'model'",
        "atif_bad.json ([2].steps[1].observation.results[0]): conversation s-3: source_call_id 'c9' matches no tool call",
        "atif_bad.json ([3].steps[0].timestamp): conversation s-4: timestamp must be an ISO 8601 string",
        "atif_bad.json ([4].steps[2]): conversation s-5 turn 3: an assistant row cannot come after an assistant row",
    ]
    assert len(errors) == len(expected)
    for want, got in zip(expected, errors):
        assert want in got


def test_jsonl_of_trajectories_names_lines(tmp_path: Path) -> None:
    good = json.loads(GOOD.read_text())
    late_system = {
        **good,
        "session_id": "s-late",
        "steps": good["steps"] + [{"step_id": 8, "source": "system", "message": "new rules"}],
    }
    path = tmp_path / "many.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(late_system) + "\n")
    trajs, errors = _read(path)
    assert [t.id for t in trajs] == ["acme__widgets-202"]
    assert errors == [
        f"{path}:2 (steps[7]): conversation s-late: only one system message is supported, and it must come first (docs/dataset-format.md: one system prompt per trajectory)"
    ]


def test_registered_and_builds_shards(tmp_path: Path) -> None:
    assert FORMATS["atif"].read is read
    result = traces.build_shards([str(GOOD)], tmp_path / "out", traces.BuildOptions(format="atif", name="atif"))
    assert traces.to_json(result.manifest.counts) == {"trajectories": 1, "instances": 1, "client_turns": 4}
    shards = traces.Shards(tmp_path / "out")
    prompts = list(traces.iter_prompts(shards.find("acme__widgets-202"), markers=False))
    assert [(p.row.turn, p.row.delay_seconds) for p in prompts] == [(1, 0.0), (3, 3.5), (5, 1.5), (7, 12.0)]
    assert [m["role"] for m in prompts[1].messages] == ["system", "user", "assistant", "tool", "tool"]
    shards.close()
