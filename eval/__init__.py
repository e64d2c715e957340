"""eval: the accuracy gates (inline, OSL, SWE-bench) and the compliance check of a submission.

The front door of the package (SWE-bench lives in `eval.swebench`, which needs the optional
extra `trajbench[swebench]` only when a run starts).
"""

from __future__ import annotations

from .compliance import Check, check_submission, compliance_json
from .errors import EvalError, GateFailed
from .inline import score_run
from .inline import summary_lines as inline_lines
from .layout import OSL_FILE, SCORES_FILE
from .osl import osl_gate
from .osl import summary_lines as osl_lines
from .results import GATE_MODES, OslResult, Scores
from .rundir import partial_run
from .verdicts import gate_verdicts

__all__ = [
    "GATE_MODES",
    "OSL_FILE",
    "SCORES_FILE",
    "Check",
    "EvalError",
    "GateFailed",
    "OslResult",
    "Scores",
    "check_submission",
    "compliance_json",
    "gate_verdicts",
    "inline_lines",
    "osl_gate",
    "osl_lines",
    "partial_run",
    "score_run",
]
