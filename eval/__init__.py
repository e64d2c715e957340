"""eval: the accuracy gates (inline, OSL, SWE-bench) and the compliance check of a submission."""

from __future__ import annotations

from .compliance import Check, check_submission
from .errors import EvalError
from .inline import score_run
from .osl import osl_gate

__all__ = sorted(["Check", "EvalError", "check_submission", "osl_gate", "score_run"])
