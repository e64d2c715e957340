"""Reading a review's verdict in tests: which (scenario, check) pairs failed, and the baseline a
trajbench without run-folder seals always has (the seal check then fails: never a pass)."""

from __future__ import annotations

from pathlib import Path

import replay
from eval import review
from eval.submission import ReviewReport

#: `replay.verify_seal` comes with sealed run folders; until then every point's seal check fails
SEALS = hasattr(replay, "verify_seal")
POINTS = ("online-c0001", "online-c0002", "online-c0004")
BASELINE = frozenset() if SEALS else frozenset((p, "seal") for p in POINTS)


def failed(report: ReviewReport) -> set[tuple[str, str]]:
    """(last folder of the point, check) of every failed check."""
    return {(c.point.rsplit("/", 1)[-1], c.check) for c in report.checks if not c.passed}


def reason(report: ReviewReport, point: str, check: str) -> str:
    (found,) = [c.reason for c in report.checks if c.point.rsplit("/", 1)[-1] == point and c.check == check]
    return found


def reviewed(tree: Path, **kw: object) -> ReviewReport:
    return review(tree, **kw).report  # type: ignore[arg-type]


def new_failures(report: ReviewReport) -> set[tuple[str, str]]:
    return failed(report) - BASELINE
