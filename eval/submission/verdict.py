"""What `trajbench review` finds: `review.json` (typed, for tools such as the results explorer)
and `review.md` (for people), and the comparison of a rolling submission with the previous one.

A rolling submission adds points over time; a point already published is a fact, so any
changed number of a point present in both (matched by system, benchmark and concurrency) fails
the review, while added and removed points are listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import traces

from .layout import REVIEW_FILE
from .manifest import Headline, SubmissionManifest


@dataclass(frozen=True)
class ReviewCheck:
    point: str  # the scenario folder relative to the tree root, or "submission"
    check: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class PointChange:
    """A number of a point present in both submissions that is not what was published."""

    scenario: str
    key: str
    before: Any
    after: Any


@dataclass(frozen=True)
class Changes:
    """A rolling submission against the previous one."""

    previous_date: str
    added: list[str]  # scenario folders new in this submission
    removed: list[str]  # published before, not in this one
    unchanged: list[str]
    changed: list[PointChange]
    #: points whose numbers are the same but whose run folder's files are not (e.g. a later
    #: `analyze cache` added its files): reported, not failed
    refiled: list[str]


@dataclass(frozen=True)
class ReviewReport(traces.JsonFile):
    FILE = REVIEW_FILE
    SORT_KEYS = False

    passed: bool
    failed: int
    total: int
    trajbench_version: str  # the reviewer's
    division: str
    submitter: str
    system: str
    benchmark: str
    submission_date: str
    checks: list[ReviewCheck]
    previous: Changes | None
    #: the sha256 of the trajbench-submission.json reviewed (its file table covers every file of
    #: the tree): a review of an earlier state of the tree vouches for nothing now ("" when the
    #: manifest could not be read)
    manifest_sha256: str = ""

    def failures(self) -> list[ReviewCheck]:
        return [c for c in self.checks if not c.passed]


def report_of(
    manifest: SubmissionManifest | None,
    checks: Sequence[ReviewCheck],
    previous: Changes | None,
    manifest_sha256: str = "",
) -> ReviewReport:
    failed = sum(not c.passed for c in checks)
    return ReviewReport(
        passed=failed == 0,
        failed=failed,
        total=len(checks),
        trajbench_version=traces.__version__,
        division=manifest.division if manifest else "",
        submitter=manifest.submitter if manifest else "",
        system=manifest.system if manifest else "",
        benchmark=manifest.benchmark if manifest else "",
        submission_date=manifest.submission_date if manifest else "",
        checks=list(checks),
        previous=previous,
        manifest_sha256=manifest_sha256,
    )


def _key(m: SubmissionManifest, concurrency: int) -> tuple[str, str, int]:
    return (m.system, m.benchmark, concurrency)


def compare(previous: SubmissionManifest, current: SubmissionManifest) -> Changes:
    """Points matched by (system, benchmark, concurrency); every headline number compared."""
    before = {_key(previous, p.concurrency): p for p in previous.points}
    after = {_key(current, p.concurrency): p for p in current.points}
    changed: list[PointChange] = []
    unchanged: list[str] = []
    refiled: list[str] = []
    for key in sorted(set(before) & set(after)):
        old, new = before[key], after[key]
        diffs = [
            PointChange(new.path, f.name, getattr(old.headline, f.name), getattr(new.headline, f.name))
            for f in fields(Headline)
            if getattr(old.headline, f.name) != getattr(new.headline, f.name)
        ]
        if diffs:
            changed += diffs
        else:
            unchanged.append(new.path)
            if old.run_digest != new.run_digest:
                refiled.append(new.path)
    return Changes(
        previous_date=previous.submission_date,
        added=sorted(after[k].path for k in set(after) - set(before)),
        removed=sorted(before[k].path for k in set(before) - set(after)),
        unchanged=sorted(unchanged),
        changed=changed,
        refiled=sorted(refiled),
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: ReviewReport) -> str:
    """review.md: the verdict, the failures first, every check by point, what changed."""
    verdict = "PASSED" if report.passed else f"FAILED ({report.failed} of {report.total} checks)"
    lines = [
        f"# Review of {report.submitter} / {report.system} / {report.benchmark} ({report.division})",
        "",
        f"Submission of {report.submission_date or '?'}, reviewed by trajbench {report.trajbench_version}: "
        f"**{verdict}**.",
        "",
        "Every number was recomputed from the tree's own run folders; nothing the tree states was taken on trust "
        "(docs/submission.md).",
        "",
    ]
    failures = report.failures()
    if failures:
        lines += ["## Failures", ""]
        lines += [f"- `{c.point}` {c.check}: {c.reason}" for c in failures]
        lines.append("")
    if report.previous is not None:
        ch = report.previous
        lines += [f"## Against the previous submission ({ch.previous_date})", ""]
        lines.append(f"- added: {', '.join(f'`{p}`' for p in ch.added) or 'none'}")
        lines.append(f"- removed: {', '.join(f'`{p}`' for p in ch.removed) or 'none'}")
        lines.append(f"- unchanged: {len(ch.unchanged)} point(s)")
        lines += [f"- CHANGED `{c.scenario}` {c.key}: {c.before} -> {c.after}" for c in ch.changed]
        lines += [f"- same numbers, other files in the run folder: `{p}`" for p in ch.refiled]
        lines.append("")
    lines += ["## Every check", "", "| point | check | result | reason |", "|---|---|---|---|"]
    lines += [
        f"| `{c.point}` | {c.check} | {'pass' if c.passed else '**FAIL**'} | {_cell(c.reason)} |" for c in report.checks
    ]
    return "\n".join(lines) + "\n"
