"""`trajbench review` on untouched trees (docs/submission.md): an official submission passes every
check (the seal's aside, until run folders are sealed), a simulated one fails, and the verdict is
written as review.json and review.md."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from clirun import in_process
from reviewed import failed, reason, reviewed
from subtrees import DATE, edit_json, write_sweep

import eval.submission as sub
from eval import submit

C2 = "closed/Acme/results/acme-box/kimi-k3/online-c0002"


def test_an_official_submission_passes_every_check(tree: Path, official: str) -> None:
    report = reviewed(tree, expected_hash=official)
    assert failed(report) == set()
    assert report.passed
    checks = {c.check for c in report.checks if c.point == C2}
    assert {
        "seal",
        "complete",
        "recomputed",
        "failure-budget",
        "client-tokens",
        "cache-exploit",
        "warm-cache",
        "output-consistency",
        "copies",
        "reference-files",
        "checker-fields",
        "manifest-entry",
        "official-profile",
        "target",
        "gates",
        "salt",
        "delays",
        "stop-issuing",
        "trajectories",
        "sampling",
        "inline",
        "osl",
        "dataset",
    } <= checks
    whole = {c.check for c in report.checks if c.point == "submission"}
    assert whole == {
        "manifest",
        "files",
        "layout",
        "checker-fields",
        "official-dataset",
        "swebench-manifest",
        "swebench",
        "same-model",
    }
    assert reason(report, "online-c0002", "failure-budget") == (
        "records.jsonl.zst: 0 of 17 window turns did not end ok; budget 0 (run.json failure_budget)"
    )
    saved = sub.ReviewReport.read(tree)
    assert saved == report
    md = (tree / "review.md").read_text()
    assert md.startswith("# Review of Acme / acme-box / kimi-k3 (closed)")
    n = len(sub.SubmissionManifest.read(tree).files)
    assert f"| `submission` | files | pass | the {n} files the manifest lists, byte for byte, and no other |" in md


@pytest.mark.slow
def test_the_review_writes_where_it_is_told_and_twice_the_same_bytes(tree: Path, official: str, tmp_path: Path):
    reviewed(tree, expected_hash=official, out=tmp_path / "a")
    reviewed(tree, expected_hash=official, out=tmp_path / "b")
    for name in ("review.json", "review.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert not (tree / "review.json").exists()


def test_a_simulated_target_never_passes(
    sample_shards: Path, system_yaml: Path, region_runs: list[Path], official: str, tmp_path: Path
) -> None:
    sweep = write_sweep(
        tmp_path / "sim", sample_shards, (1,), target="simulated", target_evidence="GET /health says simulated"
    )
    res = submit([sweep], tmp_path / "tree", submitter="Acme", division="closed", system_file=system_yaml,
                 swebench=region_runs, submission_date=DATE)  # fmt: skip
    assert "online-c0001: measured against a simulated target; the review fails it" in res.notes
    report = reviewed(tmp_path / "tree", expected_hash=official)
    assert failed(report) == {("online-c0001", "target")}
    assert reason(report, "online-c0001", "target").startswith("measured against trajbench's simulator (GET /health")


@pytest.mark.slow
def test_the_dataset_hash_is_checked_against_the_official_one(tree: Path, official: str) -> None:
    report = reviewed(tree)  # the test dataset has no published hash
    assert ("submission", "official-dataset") in failed(report)
    assert reason(report, "submission", "official-dataset").startswith("no official hash to compare with")
    report = reviewed(tree, expected_hash="f" * 64)
    assert reason(report, "submission", "official-dataset") == (
        f"trajbench-submission.json: dataset hash {official[:16]}… is not the official ffffffffffffffff… "
        "(--expected-hash)"
    )
    assert reason(report, "online-c0004", "dataset").endswith("is not the expected ffffffffffffffff…")


@pytest.mark.slow
def test_the_shards_may_come_from_the_reviewer(tree: Path, official: str, sample_shards: Path, tmp_path: Path):
    mine = Path(shutil.copytree(sample_shards, tmp_path / "official-shards"))
    report = reviewed(tree, expected_hash=official, shards=mine)
    assert failed(report) == set()


def test_a_folder_that_is_not_a_tree_fails_and_still_gets_its_review(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    report = reviewed(tmp_path / "x")
    assert failed(report) == {("submission", "manifest")}
    assert "trajbench-submission.json: no such file" in reason(report, "submission", "manifest")
    assert (tmp_path / "x" / "review.json").is_file()


def test_a_manifest_leading_outside_the_tree_is_refused(tree: Path, official: str) -> None:
    def escape(m: dict[str, Any]) -> None:
        m["points"][0]["path"] = "../../elsewhere"
        m["points"][0]["run"] = "../../elsewhere/trajbench"

    edit_json(tree / sub.SUBMISSION_FILE, escape)
    report = reviewed(tree, expected_hash=official)
    assert "point c1: its folders are not closed/Acme/results/acme-box/kimi-k3/online-c0001" in reason(
        report, "submission", "layout"
    )
    assert not any(c.point.startswith("..") for c in report.checks)
    edit_json(tree / sub.SUBMISSION_FILE, lambda m: m.update(system="../../x"))
    report = reviewed(tree, expected_hash=official)
    assert failed(report) == {("submission", "manifest")}
    assert "trajbench-submission.json: system '../../x': must be 1-128 letters" in reason(
        report, "submission", "manifest"
    )


@pytest.mark.slow
def test_cli_review_exit_code_lines_and_json(tree: Path, official: str, capsys) -> None:
    code, out, err = in_process(["review", str(tree), "--expected-hash", official], capsys)
    assert code == 0, err
    assert f"wrote {tree / 'review.md'} and {tree / 'review.json'}" in out
    code, out, _ = in_process(["review", str(tree), "--expected-hash", official, "--json"], capsys)
    assert json.loads(out)["failed"] == 0
    code, out, err = in_process(["review", str(tree), "--expected-hash", "f" * 64], capsys)
    assert code == 1 and "FAIL submission official-dataset: " in out and "Traceback" not in err
