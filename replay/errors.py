"""The one error family of the replay package."""

from __future__ import annotations


class ReplayError(Exception):
    """Base error of the replay package; `cli.main` prints it as `Error: …` with exit code 1."""
