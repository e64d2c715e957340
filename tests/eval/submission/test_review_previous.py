"""A rolling submission (`review --previous OLDER`, docs/submission.md): points added or removed
are listed, a point already published keeps every number or the review fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reviewed import failed, reason, reviewed
from subtrees import DATE, write_point

from eval import submit

#: each test builds and reviews submission trees: slow, run by .ci/run (`-m slow`)
pytestmark = pytest.mark.slow

RESULTS = "closed/Acme/results/acme-box/kimi-k3"


def _tree(sweep: Path, out: Path, system_yaml: Path, swe: list[Path], **kw: object) -> Path:
    submit([sweep], out, submitter="Acme", division="closed", system_file=system_yaml, swebench=swe,
           submission_date=kw.pop("date", DATE), **kw)  # type: ignore[arg-type]  # fmt: skip
    return out


def _part(sweep: Path, keep: tuple[str, ...], tmp: Path) -> Path:
    """A sweep folder with only some of `sweep`'s points (an earlier state of the system)."""
    from replay.results import SweepPlan

    mine = Path(shutil.copytree(sweep, tmp))
    plan = SweepPlan.read(mine)
    points = [p for p in plan.points if p.dir in keep]
    SweepPlan(plan.base, [p.concurrency for p in points], points).write(mine)
    for p in plan.points:
        if p.dir not in keep:
            shutil.rmtree(mine / p.dir)
    return mine


def test_the_same_points_again_are_unchanged(tree: Path, built_tree: Path, official: str) -> None:
    report = reviewed(tree, expected_hash=official, previous=built_tree)
    assert failed(report) == set()
    ch = report.previous
    assert ch is not None and (ch.added, ch.removed, ch.changed, ch.refiled) == ([], [], [], [])
    assert ch.unchanged == [f"{RESULTS}/online-c000{c}" for c in (1, 2, 4)]
    assert reason(report, "submission", "previous") == "against 2026-05-01: 0 added, 0 removed, 3 unchanged"


def test_points_added_and_removed_are_listed(
    sweep: Path, built_tree: Path, system_yaml: Path, region_runs: list[Path], official: str, tmp_path: Path
) -> None:
    early = _tree(_part(sweep, ("c0001", "c0002"), tmp_path / "s1"), tmp_path / "early", system_yaml, region_runs)
    report = reviewed(built_tree, expected_hash=official, previous=early, out=tmp_path / "r1")
    assert failed(report) == set()
    assert report.previous is not None and report.previous.added == [f"{RESULTS}/online-c0004"]
    later = _tree(_part(sweep, ("c0002", "c0004"), tmp_path / "s2"), tmp_path / "later", system_yaml, region_runs)
    report = reviewed(later, expected_hash=official, previous=built_tree)
    assert failed(report) == set()
    assert report.previous is not None and report.previous.removed == [f"{RESULTS}/online-c0001"]
    md = (later / "review.md").read_text()
    assert f"- removed: `{RESULTS}/online-c0001`" in md


def test_a_published_point_with_other_numbers_fails(
    sweep: Path, built_tree: Path, sample_shards: Path, system_yaml: Path, region_runs, official: str, tmp_path: Path
) -> None:
    remeasured = _part(sweep, ("c0001", "c0004"), tmp_path / "s")
    write_point(remeasured / "c0002", sample_shards, 2, turn_ms=1200)  # the same point measured again
    from subtrees import add_point

    add_point(remeasured, remeasured / "c0002", 2)
    now = _tree(remeasured, tmp_path / "now", system_yaml, region_runs, date="2026-06-01")
    report = reviewed(now, expected_hash=official, previous=built_tree)
    assert failed(report) == {("online-c0002", "published-numbers")}
    why = reason(report, "online-c0002", "published-numbers")
    assert why.startswith("published on 2026-05-01 with other numbers: ")
    assert "output_tokens_per_s 649.7777777777778 -> 676.8518518518518" in why
    assert "ttft_p50_ms 250.0 -> 240.0" in why
    assert "- CHANGED `" in (now / "review.md").read_text()


def test_the_previous_submission_must_be_of_the_same_system(
    sweep: Path, built_tree: Path, system_yaml: Path, region_runs, official: str, tmp_path: Path
) -> None:
    other = _tree(sweep, tmp_path / "other", system_yaml, region_runs, system="other-box")
    report = reviewed(built_tree, expected_hash=official, previous=other, out=tmp_path / "r")
    assert reason(report, "submission", "previous").startswith(
        "the previous submission is of closed/Acme/other-box/kimi-k3, this one of closed/Acme/acme-box/kimi-k3"
    )
    (tmp_path / "empty").mkdir()
    report = reviewed(built_tree, expected_hash=official, previous=tmp_path / "empty", out=tmp_path / "r")
    assert "trajbench-submission.json: no such file; pass the previous submission tree as --previous" in reason(
        report, "submission", "previous"
    )
