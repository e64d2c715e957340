"""The one error family of the replay package."""

from __future__ import annotations


class ReplayError(Exception):
    """Base error of the replay package; `cli.main` prints it as `Error: …` with exit code 1."""


class AllTurnsFailed(ReplayError):
    """Every issued turn of a run failed: nothing was measured. The CLI exits with `exit_code`,
    so a script can tell "the endpoint broke" from "trajbench could not start" (1)."""

    exit_code = 3


class RunInterrupted(ReplayError):
    """A sweep stopped because its current point was interrupted (Ctrl-C or SIGTERM)."""

    exit_code = 130
