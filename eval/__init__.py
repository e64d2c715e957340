"""eval: the accuracy gates (inline, OSL, SWE-bench), the compliance check of a submission, and
the submission tree with its review (`submit`, `review`; the tree's files in `eval.submission`).

The front door of the package (SWE-bench lives in `eval.swebench`, which needs the optional
extra `trajbench[swebench]` only when a run starts).
"""

from __future__ import annotations

from .compliance import Check, check_submission, compliance_json, compliance_lines, expected_hash_of
from .derive import (
    DEFAULT_INLINE_FRACTION,
    DEFAULT_OSL_TOLERANCE,
    DEFAULT_SWEBENCH_FRACTION,
    Derived,
    derive_profile,
    osl_band_from,
)
from .errors import EvalError, GateFailed
from .inline import score_run
from .inline import summary_lines as inline_lines
from .layout import OSL_FILE, SCORES_FILE
from .osl import osl_gate
from .osl import summary_lines as osl_lines
from .results import GATE_MODES, OslResult, Scores
from .review import ReviewResult, review
from .rundir import partial_run
from .submit import SubmitResult, submit
from .verdicts import gate_verdicts

__all__ = [
    "DEFAULT_INLINE_FRACTION",
    "DEFAULT_OSL_TOLERANCE",
    "DEFAULT_SWEBENCH_FRACTION",
    "GATE_MODES",
    "OSL_FILE",
    "SCORES_FILE",
    "Check",
    "Derived",
    "EvalError",
    "GateFailed",
    "OslResult",
    "ReviewResult",
    "Scores",
    "SubmitResult",
    "check_submission",
    "compliance_json",
    "compliance_lines",
    "derive_profile",
    "expected_hash_of",
    "gate_verdicts",
    "inline_lines",
    "osl_band_from",
    "osl_gate",
    "osl_lines",
    "partial_run",
    "review",
    "score_run",
    "submit",
]
