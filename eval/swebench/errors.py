"""The error of the SWE-bench runner; a subclass of the eval package's base error."""

from __future__ import annotations

from ..errors import EvalError


class SwebenchError(EvalError):
    """A SWE-bench run cannot start or continue; the message says what to change."""
