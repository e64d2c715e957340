"""Reading every trajectory of a list of source files, with the rules that span files.

Readers check one file at a time; ids must also be unique across all the sources of one build.
Both `traces validate` (which lists every error) and `traces build` (which stops at the end of
a pass with errors) go through `iter_sources`.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from .errors import TraceFormatError, TraceValidationErrors
from .formats import FORMATS
from .model import Trajectory


def iter_sources(sources: Sequence[str], fmt: str, errors: list[TraceFormatError]) -> Iterator[Trajectory]:
    """Every valid trajectory of every source; each violation is appended to `errors`."""
    reader = FORMATS[fmt].read
    seen: dict[str, str] = {}
    for src in sources:
        for traj in reader(str(src), errors.append):
            if traj.id in seen:
                errors.append(TraceFormatError(str(src), traj.rows[0].line, f"conversation id {traj.id!r} already appears in {seen[traj.id]}; ids must be unique", conversation=traj.id))
                continue
            seen[traj.id] = str(src)
            yield traj


def read_sources(sources: Sequence[str], fmt: str) -> Iterator[Trajectory]:
    """All trajectories; raises `TraceValidationErrors` listing every violation once the
    sources are read (nothing after the first error is yielded)."""
    errors: list[TraceFormatError] = []
    for traj in iter_sources(sources, fmt, errors):
        if not errors:
            yield traj
    if errors:
        raise TraceValidationErrors(errors)


def validate_sources(sources: Sequence[str], fmt: str) -> tuple[int, int, list[TraceFormatError]]:
    """(trajectories, client turns, errors) of a full pass that collects every error."""
    errors: list[TraceFormatError] = []
    n_traj = n_turns = 0
    for traj in iter_sources(sources, fmt, errors):
        n_traj += 1
        n_turns += len(traj.client_indices())
    return n_traj, n_turns, errors
