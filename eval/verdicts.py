"""A run folder's accuracy verdicts, read back from the files the gates wrote (what a report
draws a point with: replay reads no eval file itself)."""

from __future__ import annotations

from pathlib import Path

import traces
from replay import Gates

from .results import OslResult, Scores


def gate_verdicts(run_dir: Path) -> Gates:
    """The inline and OSL verdicts of a run folder; None for a gate that did not run."""
    scores = _read(Scores, run_dir)
    osl = _read(OslResult, run_dir)
    return Gates(
        inline_score=scores.score if isinstance(scores, Scores) else None,
        inline_pass=scores.passed if isinstance(scores, Scores) else None,
        osl_mean=osl.window.mean if isinstance(osl, OslResult) else None,
        osl_pass=osl.passed if isinstance(osl, OslResult) else None,
    )


def _read(cls: type[Scores] | type[OslResult], run_dir: Path) -> Scores | OslResult | None:
    if not cls.exists(run_dir):
        return None
    try:
        return cls.read(run_dir)
    except traces.ContractError:  # written by another version: the gate is unknown, not failed
        return None
