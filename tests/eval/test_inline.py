"""Inline accuracy of whole run folders (records + shards → scores.json)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from evalruns import client_turns, oracle, perfect, record, run_info, write_run

import traces
from eval import SCORES_FILE, EvalError, score_run


def _other_commands(row: traces.TurnRow) -> dict[str, Any]:
    """A model that always answers with other commands than the recording."""
    call = {
        "id": "x",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": "ls -la && wc -l README"})},
    }
    return {"content": "", "reasoning": "", "tool_calls": [call]}


def test_perfect_model_scores_one_on_every_scorable_turn(tmp_path: Path, coding_shards: Path) -> None:
    run = write_run(tmp_path / "run", coding_shards)
    res = score_run(run).to_json()
    assert res["score"] == 1.0
    assert res["window"]["score"] == 1.0
    assert all(t["score"] == 1.0 for t in res["per_turn"])
    t = res["turns"]
    issued = client_turns(coding_shards)
    assert t["issued"] == issued
    assert 0 < len(res["excluded_turns"]) < issued
    assert t["expected"] == t["observed"] == t["scored"] == issued - len(res["excluded_turns"])
    assert t["missing"] == 0
    assert res["domains"] == {"coding": {"score": 1.0, "scored": t["scored"]}}
    assert res["passed"] is True and res["threshold"] == 0.5832
    assert res["mismatches"] == {}
    # the file on disk is what was returned
    assert json.loads((run / SCORES_FILE).read_text()) == res


def test_excluded_turns_are_listed_once_numbered_by_the_answer(tmp_path: Path, coding_shards: Path) -> None:
    res = score_run(write_run(tmp_path / "run", coding_shards, repeats=2)).to_json()
    ex = res["excluded_turns"]
    assert ex and len({(e["conversation_id"], e["turn"]) for e in ex}) == len(ex)  # once, whatever the repeats
    assert {e["exclude_reason"] for e in ex} == {"no ground truth"}  # the reference's reason
    assert {e["why"] for e in ex} == {"no ground truth (the recorded answer has no recognised bash action)"}
    assert all(e["turn"] == e["client_turn"] + 1 for e in ex)  # the assistant row's number, as the reference numbers it
    assert list(ex[0])[:4] == ["conversation_id", "turn", "domain", "exclude_reason"]
    assert ex == sorted(ex, key=lambda e: (e["conversation_id"], e["client_turn"]))
    row = res["per_turn"][0]
    assert list(row)[:4] == ["conversation_id", "repeat", "turn", "domain"] and row["turn"] == row["client_turn"] + 1


def test_other_commands_score_below_threshold_with_readable_mismatches(tmp_path: Path, coding_shards: Path) -> None:
    res = score_run(write_run(tmp_path / "run", coding_shards, answer=_other_commands)).to_json()
    assert res["score"] < res["threshold"]
    assert res["passed"] is False
    top = res["mismatches"]["coding"][0]
    assert top["produced"] == "ls wc" and top["count"] > 1
    commonest = Counter(" ".join(sorted(p["gt_actions"])) for p in res["per_turn"]).most_common(1)[0]
    assert (top["expected"], top["count"]) == commonest


def test_workflow_and_coding_domains_on_the_sample(tmp_path: Path, sample_shards: Path) -> None:
    res = score_run(write_run(tmp_path / "run", sample_shards, answer=perfect)).to_json()
    assert res["score"] == 1.0
    assert set(res["domains"]) == {"coding", "workflow"}
    wf = [t for t in res["per_turn"] if t["domain"] == "workflow"]
    assert wf and all(t["model_intent"] in t["gt_intents"] for t in wf)


def test_an_answer_that_states_no_intent_scores_zero(tmp_path: Path, sample_shards: Path) -> None:
    def silent(row: traces.TurnRow) -> dict[str, Any]:
        a = oracle(row)
        return {**a, "content": "", "reasoning": ""} if row.domain == "workflow" else a

    perfect = score_run(write_run(tmp_path / "perfect", sample_shards, answer=oracle)).to_json()
    assert perfect["domains"]["workflow"]["score"] == 1.0  # every recorded workflow answer states its intent
    res = score_run(write_run(tmp_path / "run", sample_shards, answer=silent)).to_json()
    wf = [t for t in res["per_turn"] if t["domain"] == "workflow"]
    assert wf and all(t["model_intent"] is None and t["score"] == 0.0 for t in wf)
    assert res["domains"]["workflow"]["score"] == 0.0
    assert res["domains"]["coding"]["score"] == 1.0


def test_wrong_intent_scores_zero_and_is_reported(tmp_path: Path, sample_shards: Path) -> None:
    def answer(row: traces.TurnRow) -> dict[str, Any]:
        a = oracle(row)
        if row.domain == "workflow":
            a = {**a, "content": "intent: I999", "reasoning": ""}
        return a

    res = score_run(write_run(tmp_path / "run", sample_shards, answer=answer)).to_json()
    assert res["domains"]["workflow"]["score"] == 0.0
    assert res["domains"]["coding"]["score"] == 1.0
    assert {m["produced"] for m in res["mismatches"]["workflow"]} == {"I999"}


def test_failed_turn_scores_zero_and_aborts_the_rest_of_its_instance(tmp_path: Path, coding_shards: Path) -> None:
    shards = traces.Shards(coding_shards)
    inst = shards.instance(0)
    fail_at = 2  # client turn index: turns 0 and 1 ok, 2 fails, the rest never sent
    recs = [record(r, oracle(r), tokens=5) for r in inst.turns[:fail_at]]
    recs.append(record(inst.turns[fail_at], oracle(inst.turns[fail_at]), error_kind="timeout"))
    res = score_run(write_run(tmp_path / "run", coding_shards, records=recs)).to_json()
    n = len(inst.turns)
    t = res["turns"]
    assert t["issued"] == n  # the reference counts the aborted turns as issued
    assert t["sent"] == fail_at + 1 and t["aborted_unsent"] == n - fail_at - 1
    excluded = sum(1 for e in res["excluded_turns"] if e["conversation_id"] == inst.trajectory_id)
    assert t["scored"] == n - excluded
    assert t["observed"] == fail_at
    assert t["missing_by_status"]["timeout"] == 1
    assert res["score"] == round(fail_at / t["scored"], 4)
    statuses = {p["client_turn"]: p["status"] for p in res["per_turn"]}
    assert statuses[inst.turns[fail_at].turn] == "timeout"
    assert statuses[inst.turns[-1].turn] in ("aborted",)
    assert res["mismatches"]["coding"][0]["produced"].startswith("(no output: ")


def test_a_partial_turn_is_scored_on_what_arrived_and_its_instance_goes_on(tmp_path: Path, coding_shards: Path) -> None:
    """The reference completes a turn whose stream broke (or carried an error object, a
    malformed line, nothing) with what arrived: it is observed and scored on that output, and the
    turns after it were sent; an empty one scores 0 but is not missing."""
    inst = traces.Shards(coding_shards).instance(0)
    recs = [record(r, oracle(r), tokens=5) for r in inst.turns]
    base = score_run(write_run(tmp_path / "base", coding_shards, records=recs)).to_json()
    scorable = [p["client_turn"] for p in base["per_turn"] if p["conversation_id"] == inst.trajectory_id]
    broken, empty = (next(k for k, r in enumerate(inst.turns) if r.turn == t) for t in scorable[:2])
    recs[broken] = replace(recs[broken], error_kind="stream", error_message="the stream broke")
    recs[empty] = replace(recs[empty], content="", reasoning="", tool_calls=(), error_kind="empty", error_message="-")
    res = score_run(write_run(tmp_path / "run", coding_shards, records=recs)).to_json()
    rows = {p["client_turn"]: p for p in res["per_turn"] if p["conversation_id"] == inst.trajectory_id}
    t = res["turns"]
    assert (t["missing"], t["aborted_unsent"], t["observed"], t["scored"]) == (
        0,
        0,
        t["scored"],
        base["turns"]["scored"],
    )
    assert (rows[scorable[0]]["status"], rows[scorable[0]]["score"]) == ("stream", 1.0)  # its output arrived
    assert (rows[scorable[1]]["status"], rows[scorable[1]]["score"], "missing" in rows[scorable[1]]) == (
        "empty",
        0.0,
        False,
    )


def test_cancelled_and_stopped_instances_do_not_add_unsent_turns(tmp_path: Path, coding_shards: Path) -> None:
    shards = traces.Shards(coding_shards)
    a, b = shards.instance(0), shards.instance(1)
    recs = [
        record(a.turns[0], oracle(a.turns[0])),
        record(a.turns[1], oracle(a.turns[1]), error_kind="cancelled"),
        record(b.turns[0], oracle(b.turns[0])),
    ]
    res = score_run(write_run(tmp_path / "run", coding_shards, records=recs)).to_json()
    t = res["turns"]
    assert t["aborted_unsent"] == 0
    assert t["not_issued"] == len(a.turns) - 2 + len(b.turns) - 1
    assert t["scored"] == 3 and t["missing"] == 1
    assert res["score"] == round(2 / 3, 4)


def test_repeats_count_and_window_score_sits_beside_the_whole_run(tmp_path: Path, sample_shards: Path) -> None:
    # repeat 2 (not stored in the shards) is out of the window and answered with nothing
    shards = traces.Shards(sample_shards)
    recs = []
    for inst in shards:
        for row in inst.turns:
            recs.append(record(row, perfect(row), repeat=1, in_window=True))
            recs.append(record(row, {"content": "", "reasoning": "", "tool_calls": []}, repeat=2, in_window=False))
    res = score_run(write_run(tmp_path / "run", sample_shards, records=recs)).to_json()
    assert res["window"]["score"] == 1.0
    assert res["score"] == 0.5
    assert res["turns"]["scored"] == 2 * res["window"]["scored"]
    assert {p["repeat"] for p in res["per_turn"]} == {1, 2}


def test_scores_are_deterministic(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "run", sample_shards)
    score_run(run)
    first = (run / SCORES_FILE).read_bytes()
    score_run(run)
    assert (run / SCORES_FILE).read_bytes() == first


def test_records_of_another_dataset_are_an_error(tmp_path: Path, sample_shards: Path, coding_shards: Path) -> None:
    run = write_run(tmp_path / "run", coding_shards)
    with pytest.raises(
        EvalError, match=r"records.jsonl: trajectory \S+ \(instance \S+\) is not in the shards .*--shards"
    ):
        score_run(run, shards=sample_shards)


def test_missing_run_files_are_errors(tmp_path: Path, sample_shards: Path) -> None:
    with pytest.raises(EvalError, match=r"no run\.json"):
        score_run(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"shards": "nowhere"}))
    with pytest.raises(
        EvalError,
        match=re.escape(
            "run.json: the field 'trajbench_version' is missing; the run was written by another trajbench version"
        ),
    ):
        score_run(tmp_path)
    run_info(traces.Shards(sample_shards), shards="nowhere").write(tmp_path)
    with pytest.raises(EvalError, match=r"names shards 'nowhere'.*pass --shards"):
        score_run(tmp_path)


def test_rescoring_keeps_entries_others_merged_into_scores_json(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "run", sample_shards, answer=perfect)
    (run / SCORES_FILE).write_text(json.dumps({"swebench": {"score": 0.9}, "score": 0.1}))
    res = score_run(run).to_json()
    on_disk = json.loads((run / SCORES_FILE).read_text())
    assert on_disk["swebench"] == {"score": 0.9} and on_disk["score"] == 1.0 == res["score"]


def test_aborted_records_written_by_replay_count_once(tmp_path: Path, coding_shards: Path) -> None:
    inst = traces.Shards(coding_shards).instance(0)
    recs = [record(inst.turns[0], oracle(inst.turns[0]), error_kind="http")]
    recs += [record(r, oracle(r), error_kind="aborted") for r in inst.turns[1:]]
    res = score_run(write_run(tmp_path / "run", coding_shards, records=recs)).to_json()
    t = res["turns"]
    assert (t["issued"], t["sent"], t["aborted_unsent"], t["observed"]) == (len(inst.turns), 1, len(inst.turns) - 1, 0)
    excluded = sum(1 for e in res["excluded_turns"] if e["conversation_id"] == inst.trajectory_id)
    assert t["scored"] == len(inst.turns) - excluded and res["score"] == 0.0
