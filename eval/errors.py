"""The one error family of the eval package."""

from __future__ import annotations


class EvalError(Exception):
    """Base error of the eval package; `cli.main` prints it as `Error: …` with exit code 1."""
