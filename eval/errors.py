"""The one error family of the eval package."""

from __future__ import annotations


class EvalError(Exception):
    """Base error of the eval package; `cli.main` prints it as `Error: …` with exit code 1."""


class GateFailed(EvalError):
    """An accuracy gate or a compliance check said no: the command worked and the answer is no.
    The CLI exits with `exit_code` (1) after printing the verdict, without an `Error:` line."""

    exit_code = 1
