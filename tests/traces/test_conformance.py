"""Conformance on the real fixture (../shared/fixtures/mlperf_coding_20.jsonl): counts, salts,
the first turns' request messages checked field by field against docs/requests.md, docs/salting.md, and the data card
of the official example. Skipped where the fixture is absent (a clone outside the workspace)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cardrecipes import CARDS_DIR, recipe_problems
from sinks import raising_sink

import traces
from traces import BuildOptions, Shards, build_shards, get_profile, iter_prompts, request_body
from traces.formats import FORMATS


@pytest.fixture(scope="module")
def fixture_rows() -> list[dict[str, Any]]:
    from tests.conftest import FIXTURES

    path = FIXTURES / "mlperf_coding_20.jsonl"
    if not path.is_file():
        pytest.skip("shared fixtures absent")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Shards:
    from tests.conftest import FIXTURES

    path = FIXTURES / "mlperf_coding_20.jsonl"
    if not path.is_file():
        pytest.skip("shared fixtures absent")
    out = tmp_path_factory.mktemp("b") / "shards"
    build_shards([str(path)], out, BuildOptions(name="coding20"))
    return Shards(out)


def test_fixture_counts(coding20: Path) -> None:
    trajs = list(FORMATS["mlperf-jsonl"].read(str(coding20), raising_sink))
    assert len(trajs) == 20
    assert sum(len(t.client_indices()) for t in trajs) == 1007
    assert sum(1 for t in trajs for r in t.rows if r.role == "assistant") == 1007
    assert {t.domain for t in trajs} == {"coding"}


def test_manifest_counts_and_salts(built: Shards) -> None:
    assert traces.to_json(built.manifest.counts) == {"trajectories": 20, "instances": 20, "client_turns": 1007}
    inst = built.find("django__django-16899")
    assert {t.salt_conversation for t in inst.turns} == {"edc0"}
    assert {t.salt_repeat for t in inst.turns} == {"4461"}


@pytest.mark.parametrize("tid", ["django__django-16899", "astropy__astropy-12907"])
def test_first_turns_match_spec(built: Shards, fixture_rows: list[dict[str, Any]], tid: str) -> None:
    rows = [r for r in fixture_rows if r["conversation_id"] == tid]
    prompts = list(iter_prompts(built.find(tid)))
    first, second = prompts[0], prompts[1]
    system = rows[0]["system"]
    salt_c = traces.make_salt("mlperf", tid, 1).conversation
    # turn 1: salted system + the user row
    assert first.row.turn == 1
    assert first.messages == [
        {"role": "system", "content": f"[salt: 4461]\n\n{system}\n\n[salt: {salt_c}]"},
        {"role": "user", "content": rows[0]["content"]},
    ]
    # turn 3: + recorded assistant (marker inside its reasoning, no content key) + one tool
    # message per result
    assistant, tool = rows[1], rows[2]
    assert second.row.turn == 3
    assert second.messages[:2] == first.messages
    marked = second.messages[2]
    assert marked["role"] == "assistant"
    space = re.search(r"\S\s", assistant["reasoning_content"])
    assert space is not None
    cut = space.start() + 1
    assert (
        marked["reasoning_content"] == assistant["reasoning_content"][:cut] + " " + assistant["reasoning_content"][cut:]
    )
    assert marked["tool_calls"] == assistant["tool_calls"]
    assert "content" not in marked
    assert second.messages[3:] == [
        {"role": "tool", "tool_call_id": r["tool_call_id"], "content": r["content"]} for r in tool["tool_results"]
    ]
    assert second.row.delay_seconds == tool["delay_seconds"]
    # tools given only on the first user row are sent on every turn
    assert second.tools == rows[0]["tools"]
    body = request_body(second.messages, second.tools, get_profile("qwen3.6-35b-a3b"))
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == rows[0]["tools"]
    assert body["max_completion_tokens"] == 8192 and body["top_k"] == 20
    assert body["chat_template_kwargs"] == {"preserve_thinking": True}
    for key in ("delay_seconds", "intent_codes", "conversation_id", "turn"):
        assert key not in json.dumps(body["messages"][-1])[:0] and key not in body


def test_ground_truth_is_the_next_assistant_row(built: Shards, fixture_rows: list[dict[str, Any]]) -> None:
    inst = built.find("django__django-16899")
    rows = [r for r in fixture_rows if r["conversation_id"] == "django__django-16899"]
    by_turn = {r["turn"]: r for r in rows}
    for t in inst.turns:
        expected = {k: v for k, v in by_turn[t.turn + 1].items() if k != "conversation_id"}
        assert t.expected == expected


def test_export_round_trip_equals_fixture(built: Shards, fixture_rows: list[dict[str, Any]], tmp_path: Path) -> None:

    out = tmp_path / "back.jsonl.zst"
    traces.export_shards(str(built.path), str(out))
    back = list(FORMATS["mlperf-jsonl"].read(str(out), raising_sink))
    to_records = FORMATS["mlperf-jsonl"].to_records
    assert to_records is not None
    flat = [r for t in back for r in to_records(t)]
    assert flat == fixture_rows


def test_no_history_marker_gives_reference_prompts(coding20: Path, tmp_path: Path) -> None:
    build_shards([str(coding20)], tmp_path / "s", BuildOptions(history_marker=False))
    prompts = list(iter_prompts(Shards(tmp_path / "s").instance(0)))
    assert not prompts[1].messages[2]["reasoning_content"].startswith(" ")


def test_the_official_example_card_rebuilds_its_manifest(coding20: Path, tmp_path: Path) -> None:
    """data_cards/mlperf-coding-20.md, rebuilt from its recipe (the fixture), matches the manifest;
    TRAJBENCH_UPDATE_GOLDEN=1 rewrites it."""
    assert recipe_problems(CARDS_DIR / "mlperf-coding-20.md", tmp_path) == []
