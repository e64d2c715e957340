"""eval: the accuracy gates (inline, OSL, SWE-bench), the compliance check of a submission with
the verification of a run folder it starts from (seal, completeness, recomputation, failure
budget, client-counted tokens), and the submission tree with its review (`submit`, `review`; the
tree's files in `eval.submission`).

The front door of the package (SWE-bench lives in `eval.swebench`, which needs the optional
extra `trajbench[swebench]` only when a run starts). The gates' declarations, errors and result
types load with it; the scorers and the checks (which read run folders with the replay results,
pyarrow and numpy) on first use, so the command line starts without them. A point's two gates
share one reading of its run folder: `open_run`, then `score_run(run)` and `osl_gate(run)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .checks import Check
from .errors import EvalError, GateFailed
from .gates import DEFAULT_INLINE_FRACTION, DEFAULT_OSL_TOLERANCE, DEFAULT_SWEBENCH_FRACTION, GATES_OPTION
from .layout import OSL_FILE, SCORES_FILE
from .results import GATE_MODES, OslResult, Scores

if TYPE_CHECKING:
    from .compliance import check_submission, compliance_json, compliance_lines, expected_hash_of
    from .derive import Derived, derive_profile, osl_band_from
    from .inline import score_run
    from .inline import summary_lines as inline_lines
    from .osl import osl_gate
    from .osl import summary_lines as osl_lines
    from .plan import ShardPlan, shard_plan
    from .recompute import Difference, Recomputation, recompute_dir
    from .review import ReviewResult, review
    from .rundir import Run, open_run, partial_run
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
    "Run",
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
    "open_run",
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

_LAZY = {  # submodule: the names it gives, imported on first use (the scorers and the checks
    # read run folders with pyarrow, numpy and the replay results; a command line does not)
    ".compliance": ("check_submission", "compliance_json", "compliance_lines", "expected_hash_of"),
    ".derive": ("Derived", "derive_profile", "osl_band_from"),
    ".inline": ("score_run", "summary_lines as inline_lines"),
    ".osl": ("osl_gate", "summary_lines as osl_lines"),
    ".plan": ("ShardPlan", "shard_plan"),
    ".recompute": ("Difference", "Recomputation", "recompute_dir"),
    ".review": ("ReviewResult", "review"),
    ".rundir": ("Run", "open_run", "partial_run"),
    ".submit": ("SubmitResult", "submit"),
    ".verdicts": ("gate_verdicts",),
    ".verification": ("BudgetUse", "Completeness"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
