"""The `mini-swe-agent` reader: text actions become bash tool calls, tool-calling runs, errors."""

from __future__ import annotations

import json
from pathlib import Path

import traces
from traces.formats import FORMATS
from traces.formats.mini_swe_agent import BASH_TOOL, read

DATA = Path(__file__).parent / "data" / "formats"
TEXT = DATA / "acme__widgets-101.traj.json"
TOOLCALL = DATA / "mini_swe_agent_toolcall.traj.json"


def _read(path: Path) -> tuple[list[traces.Trajectory], list[str]]:
    errors: list[traces.TraceFormatError] = []
    return list(read(str(path), errors.append)), [str(e) for e in errors]


def _command(call: dict) -> str:
    return json.loads(call["function"]["arguments"])["command"]


def test_text_actions_become_bash_tool_calls() -> None:
    (traj,), errors = _read(TEXT)
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
    assert traj.rows[4].role == "user" and traj.rows[4].content.startswith("Please always provide EXACTLY ONE action")
    assert _command(traj.rows[7].tool_calls[0]) == "echo MINI_SWE_AGENT_FINAL_OUTPUT && git diff"


def test_tool_calling_run_keeps_ids_reasoning_and_timing() -> None:
    (traj,), errors = _read(TOOLCALL)
    assert errors == []
    assert traj.id == "acme__parser-7"
    assert len(traj.rows) == 5  # the `exit` message is not a turn
    call = traj.rows[1]
    assert call.content is None and call.reasoning_content == "Look at the parser and its tests."
    assert [c["id"] for c in call.tool_calls or ()] == ["toolu_1", "toolu_2"]
    assert call.extra == {} and call.params == {}  # litellm's function_call/extra are not carried
    tools = traj.rows[2]
    assert [r["tool_call_id"] for r in tools.tool_results or ()] == ["toolu_1", "toolu_2"]
    assert tools.delay_seconds == 0.5  # parallel results: the later one's time after the answer
    assert traj.rows[4].delay_seconds == 1.5


def test_broken_trajectories_name_location_and_rule() -> None:
    trajs, errors = _read(DATA / "mini_swe_agent_bad.json")
    assert trajs == []
    expected = [
        "mini_swe_agent_bad.json ([0].trajectory_format): conversation t-1: unknown trajectory_format 'swe-agent-0.3'",
        "mini_swe_agent_bad.json ([1]): conversation t-2: missing `messages`",
        "mini_swe_agent_bad.json ([2].messages[3]): conversation t-3 turn 3: an assistant row cannot come after an assistant row",
    ]
    assert len(errors) == len(expected)
    for want, got in zip(expected, errors):
        assert want in got


def test_not_json_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.traj.json"
    path.write_text("{not json")
    trajs, errors = _read(path)
    assert trajs == [] and errors[0].startswith(f"{path}: not valid JSON")


def test_registered_and_builds_shards(tmp_path: Path) -> None:
    assert FORMATS["mini-swe-agent"].read is read
    srcs = [str(TEXT), str(TOOLCALL)]
    result = traces.build_shards(srcs, tmp_path / "out", traces.BuildOptions(format="mini-swe-agent", name="msa"))
    assert traces.to_json(result.manifest.counts) == {"trajectories": 2, "instances": 2, "client_turns": 5 + 3}
    shards = traces.Shards(tmp_path / "out")
    prompts = list(traces.iter_prompts(shards.find("acme__widgets-101"), markers=False))
    assert [p.row.turn for p in prompts] == [1, 3, 5, 7, 9]
    assert prompts[0].row.domain == "coding" and prompts[0].tools == [BASH_TOOL]
    assert prompts[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_2_0",
        "content": prompts[1].row.delta[-1]["tool_results"][0]["content"],
    }
    assert json.loads(prompts[0].row.expected_json or "null")["tool_calls"][0]["id"] == "call_2_0"
    shards.close()
