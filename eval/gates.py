"""The accuracy gates of one Pareto point (SPEC §9.1–§9.2), run right after its replay.

`replay run`, `replay sweep` and the demo call this so every point gets `scores.json` and
`osl.json` in its run folder, which the report reads to mark points that fail a gate.
"""

from __future__ import annotations

from pathlib import Path

from .errors import EvalError
from .inline import score_run
from .inline import summary_lines as inline_lines
from .osl import osl_gate
from .osl import summary_lines as osl_lines


def evaluate_point(run_dir: str | Path) -> list[str]:
    """Score inline accuracy and the OSL gate of a run folder; return the readable lines."""
    lines: list[str] = []
    for name, gate, describe in (("inline score", score_run, inline_lines), ("OSL gate", osl_gate, osl_lines)):
        try:
            lines += describe(gate(run_dir))
        except EvalError as exc:  # the run itself is complete; say why this gate has no result
            lines.append(f"{name} not computed: {exc}")
    return lines
