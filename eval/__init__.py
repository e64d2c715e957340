"""eval: the accuracy gates (inline, OSL, SWE-bench), the compliance check of a submission with
the verification of a run folder it starts from (seal, completeness, recomputation, failure
budget, client-counted tokens), and the submission tree with its review (`submit`, `review`; the
tree's files in `eval.submission`).

The front door of the package (SWE-bench lives in `eval.swebench`, which needs the optional
extra `trajbench[swebench]` only when a run starts).
"""

from __future__ import annotations

from .checks import Check
from .compliance import check_submission, compliance_json, compliance_lines, expected_hash_of
from .derive import (
    DEFAULT_INLINE_FRACTION,
    DEFAULT_OSL_TOLERANCE,
    DEFAULT_SWEBENCH_FRACTION,
    Derived,
    derive_profile,
    osl_band_from,
)
from .errors import EvalError, GateFailed
from .gates import GATES_OPTION
from .inline import score_run
from .inline import summary_lines as inline_lines
from .layout import OSL_FILE, SCORES_FILE
from .osl import osl_gate
from .osl import summary_lines as osl_lines
from .plan import ShardPlan, shard_plan
from .recompute import Difference, Recomputation, recompute_dir
from .results import GATE_MODES, OslResult, Scores
from .review import ReviewResult, review
from .rundir import partial_run
from .submit import SubmitResult, submit
from .verdicts import gate_verdicts
from .verification import BudgetUse, Completeness

__all__ = [
    "DEFAULT_INLINE_FRACTION",
    "DEFAULT_OSL_TOLERANCE",
    "DEFAULT_SWEBENCH_FRACTION",
    "GATES_OPTION",
    "GATE_MODES",
    "OSL_FILE",
    "SCORES_FILE",
    "BudgetUse",
    "Check",
    "Completeness",
    "Derived",
    "Difference",
    "EvalError",
    "GateFailed",
    "OslResult",
    "Recomputation",
    "ReviewResult",
    "Scores",
    "ShardPlan",
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
    "recompute_dir",
    "review",
    "score_run",
    "shard_plan",
    "submit",
]
