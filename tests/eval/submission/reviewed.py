"""Reading a review's verdict in tests: which (scenario, check) pairs failed, and why."""

from __future__ import annotations

from pathlib import Path

from eval import review
from eval.submission import ReviewReport


def failed(report: ReviewReport) -> set[tuple[str, str]]:
    """(last folder of the point, check) of every failed check."""
    return {(c.point.rsplit("/", 1)[-1], c.check) for c in report.checks if not c.passed}


def reason(report: ReviewReport, point: str, check: str) -> str:
    (found,) = [c.reason for c in report.checks if c.point.rsplit("/", 1)[-1] == point and c.check == check]
    return found


def reviewed(tree: Path, **kw: object) -> ReviewReport:
    return review(tree, **kw).report  # type: ignore[arg-type]
