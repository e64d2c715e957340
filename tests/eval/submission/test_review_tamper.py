"""The review takes nothing on trust: each way of editing a submission tree (the issue's list:
partial runs, failures, hand edits of run.json, records, result_summary.json, the manifest's
numbers; and more) fails the review naming the file and the number, also when the editor made
the manifest's file table match again (`reseal_tree`). The untouched tree passes
(test_review_tree.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from reviewed import failed, reason, reviewed
from subtrees import edit_json, reseal_tree, rewrite_records

import eval.submission as sub
from replay import SUMMARY_FILE

#: each test edits and reviews a copy of a submission tree: slow, run by .ci/run (`-m slow`)
pytestmark = pytest.mark.slow

RESULTS = "closed/Acme/results/acme-box/kimi-k3"


def _run(tree: Path, c: int) -> Path:
    return tree / RESULTS / f"online-c{c:04d}" / "trajbench"


def test_an_edit_without_covering_it_names_the_files(tree: Path, official: str) -> None:
    (tree / RESULTS / "online-c0001" / "notes.txt").write_text("extra")
    edit_json(_run(tree, 2) / "run.json", lambda d: d.update(inject_delays=True))  # same values, other bytes
    report = reviewed(tree, expected_hash=official)
    assert reason(report, "submission", "files") == (
        f"trajbench-submission.json lists other files: 1 extra ({RESULTS}/online-c0001/notes.txt); "
        f"1 changed ({RESULTS}/online-c0002/trajbench/run.json)"
    )
    assert ("online-c0002", "manifest-entry") in failed(report)  # the run folder's digest


def test_a_partial_run_fails_complete_and_its_numbers(tree: Path, official: str) -> None:
    rewrite_records(_run(tree, 2), lambda rs: rs[:12])
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert {("online-c0002", "complete"), ("online-c0002", "recomputed"), ("online-c0002", "copies")} <= (
        failed(report)
    )
    assert reason(report, "online-c0002", "complete").startswith(
        "records.jsonl.zst: 12 of 17 planned turns recorded; without a record: "
    )
    assert f"{SUMMARY_FILE}: n_samples_issued stored 17, recomputed 12" in reason(report, "online-c0002", "recomputed")
    assert "trajbench-submission.json: points[c2].headline.n_samples_issued is 17, recomputed 12" in reason(
        report, "online-c0002", "copies"
    )


def test_failed_turns_fail_the_budget_with_their_counts(tree: Path, official: str) -> None:
    def fail_one(rs: list[Any]) -> list[Any]:
        r = rs[3]
        rs[3] = replace(r, error_kind="http", http_status=500, error_message="boom", content="", reasoning="",
                        tool_calls=(), completion_tokens=None, client_output_tokens=None, finish_reason=None)  # fmt: skip
        return rs

    rewrite_records(_run(tree, 4), fail_one)
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert reason(report, "online-c0004", "failure-budget").startswith("records.jsonl.zst: 1 of 17 window turns")
    assert f"{SUMMARY_FILE}: n_samples_failed stored 0, recomputed 1" in reason(report, "online-c0004", "recomputed")
    assert "trajbench-submission.json: points[c4].headline.n_samples_failed is 0, recomputed 1" in reason(
        report, "online-c0004", "copies"
    )


def test_a_hand_edited_run_json_is_seen(tree: Path, official: str) -> None:
    edit_json(_run(tree, 2) / "run.json", lambda d: d.update(concurrency=8))
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert "run.json concurrency 8, the manifest says 2" in reason(report, "online-c0002", "manifest-entry")
    assert reason(report, "online-c0002", "reference-files").startswith(
        f"{RESULTS}/online-c0002/config.yaml: not what the run folder makes"
    )


def test_edited_records_are_recomputed(tree: Path, official: str) -> None:
    def inflate(rs: list[Any]) -> list[Any]:
        return [replace(r, completion_tokens=4300, client_output_tokens=4300) for r in rs]

    rewrite_records(_run(tree, 4), inflate)
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    why = reason(report, "online-c0004", "copies")
    assert "trajbench-submission.json: points[c4].headline.output_tokens_per_s is 835.429, recomputed 8354.29" in why
    assert f"{SUMMARY_FILE}: output_sequence_lengths.total stored 7310, recomputed 73100" in reason(
        report, "online-c0004", "recomputed"
    )
    assert "osl" in {c for p, c in failed(report) if p == "online-c0004"}


def test_an_edited_result_summary_is_recomputed_in_every_copy(tree: Path, official: str) -> None:
    sc = tree / RESULTS / "online-c0004"
    for path in (sc / "performance/result_summary.json", sc / "performance/run_1/result_summary.json",
                 sc / "trajbench" / SUMMARY_FILE):  # fmt: skip
        edit_json(path, lambda d: d.update(qps=d["qps"] * 10))
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    # the copies are the run's summary, byte for byte: the run's summary itself is what fails
    assert ("online-c0004", "copies") not in failed(report)
    assert ("online-c0004", "seal") in failed(report)
    assert reason(report, "online-c0004", "recomputed").startswith(
        f"{SUMMARY_FILE}: qps stored 19.4286, recomputed 1.94286"
    )
    # the copies match each other: the self-check alone would not see it
    assert ("online-c0004", "checker-fields") not in failed(report)


def test_only_the_checker_copy_edited(tree: Path, official: str) -> None:
    edit_json(tree / RESULTS / "online-c0001/performance/result_summary.json", lambda d: d.update(n_samples_issued=170))
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert reason(report, "online-c0001", "copies") == (
        f"{RESULTS}/online-c0001/performance/result_summary.json: not a byte copy of "
        f"{RESULTS}/online-c0001/trajbench/performance/result_summary.json"
    )
    assert "differs from " in reason(report, "online-c0001", "checker-fields")  # run_1's copy no longer agrees


def test_the_manifests_numbers_are_recomputed(tree: Path, official: str) -> None:
    m = sub.SubmissionManifest.read(tree)
    p = m.points[2]
    bumped = replace(p, headline=replace(p.headline, n_samples_issued=170, output_tokens_per_s=8354.0))
    replace(m, points=[*m.points[:2], bumped]).write(tree)
    report = reviewed(tree, expected_hash=official)
    why = reason(report, "online-c0004", "copies")
    assert "trajbench-submission.json: points[c4].headline.output_tokens_per_s is 8354, recomputed 835.429" in why
    assert "trajbench-submission.json: points[c4].headline.n_samples_issued is 170, recomputed 17" in why


def test_an_edited_accuracy_file_or_score_is_seen(tree: Path, official: str) -> None:
    acc = tree / RESULTS / "online-c0002/accuracy/accuracy_results.json"
    edit_json(acc, lambda d: d["accuracy_scores"][0].update(score=0.99))
    edit_json(_run(tree, 1) / "scores.json", lambda d: d.update(score=0.5))
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert reason(report, "online-c0002", "reference-files").startswith(
        f"{RESULTS}/online-c0002/accuracy/accuracy_results.json: not what the run folder makes"
    )
    assert "scores.json: score stored 0.5, recomputed 1" in reason(report, "online-c0001", "recomputed")


def test_a_placeholder_in_the_system_description_fails_the_self_check(tree: Path, official: str) -> None:
    edit_json(tree / "closed/Acme/systems/acme-box.json", lambda d: d.update(framework="TODO: e.g. vLLM"))
    (tree / RESULTS / "online-c0001/README.md").write_text("")
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert reason(report, "submission", "checker-fields") == (
        "closed/Acme/systems/acme-box.json: framework: 'TODO: e.g. vLLM' is a template placeholder; replace it with "
        "the system's answer"
    )
    assert reason(report, "online-c0001", "checker-fields") == (
        f"{RESULTS}/online-c0001/README.md: empty; the checker requires it non-empty"
    )


def test_a_scenario_the_manifest_does_not_list(tree: Path, official: str) -> None:
    import shutil

    shutil.copytree(tree / RESULTS / "online-c0004", tree / RESULTS / "online-c0008")
    reseal_tree(tree)
    report = reviewed(tree, expected_hash=official)
    assert reason(report, "submission", "layout") == (
        f"{RESULTS}/online-c0008: a scenario folder the manifest does not list"
    )
