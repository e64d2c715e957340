"""A run folder's accuracy verdicts, read back from the files the gates wrote (what a report
draws a point with: replay reads no eval file itself)."""

from __future__ import annotations

from pathlib import Path

import traces
from replay import Gates

from .gates import research_label
from .results import OslResult, Scores


def gate_verdicts(run_dir: Path) -> Gates:
    """The inline and OSL verdicts of a run folder and the gate mode each was judged by
    (docs/accuracy.md); None for a gate that did not run."""
    scores = _read(Scores, run_dir)
    osl = _read(OslResult, run_dir)
    return Gates(
        inline_score=scores.score if isinstance(scores, Scores) else None,
        inline_pass=scores.passed if isinstance(scores, Scores) else None,
        osl_mean=osl.window.mean if isinstance(osl, OslResult) else None,
        osl_pass=osl.passed if isinstance(osl, OslResult) else None,
        inline_gates=scores.gates.mode if isinstance(scores, Scores) else None,
        osl_gates=osl.gates.mode if isinstance(osl, OslResult) else None,
        note=research_label(doc.gates.mode for doc in (scores, osl) if doc is not None),
    )


def research_gates(run_dir: Path) -> dict[str, str]:
    """The gate files of a run folder judged by anything but the official gates: file → mode."""
    found = {cls.FILE: doc.gates.mode for cls in (Scores, OslResult) if (doc := _read(cls, run_dir)) is not None}
    return {name: mode for name, mode in found.items() if mode != "official"}


def _read(cls: type[Scores] | type[OslResult], run_dir: Path) -> Scores | OslResult | None:
    if not cls.exists(run_dir):
        return None
    try:
        return cls.read(run_dir)
    except traces.ContractError:  # written by another version: the gate is unknown, not failed
        return None
