"""eval: the accuracy gates (inline, OSL, SWE-bench) and the compliance check of a run."""

from __future__ import annotations

from .errors import EvalError

__all__ = sorted(["EvalError"])
