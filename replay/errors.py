"""The one error family of the replay package."""

from __future__ import annotations


class ReplayError(Exception):
    """Base error of the replay package; `cli.main` prints it as `Error: …` with exit code 1."""


class AllTurnsFailed(ReplayError):
    """Every issued turn of a run failed: nothing was measured. The CLI exits with `exit_code`,
    so a script can tell "the endpoint broke" from "trajbench could not start" (1)."""

    exit_code = 3


class Interrupted(ReplayError):
    """A sweep stopped by SIGINT/SIGTERM after the interrupted point drained; `exit_code` is
    the conventional 128 + signal number (the CLI exits with it)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageProblem(ReplayError):
    """Options that cannot go together, or one that cannot be read, whether the command line or
    a `--config` file gave them: a usage error (the CLI shows it as click does, exit code 2).
    `option` names the one at fault, when there is one."""

    exit_code = 2

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class FolderInUse(ReplayError):
    """A run or sweep folder another live process is writing (it holds the folder's lock);
    `pid` is that process, when its lock file says."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid
