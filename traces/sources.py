"""Reading every trajectory of a list of source files, with the rules that span files.

Readers check one file at a time; ids must also be unique across all the sources of one build.
Both `traces validate` (which lists every error) and `traces build` (which stops at the end of
a pass with errors) go through `iter_sources`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .errors import ErrorCapReached, TraceFormatError, TraceValidationErrors
from .formats import FORMATS
from .model import Trajectory
from .progress import Progress

#: A pass stops after this many errors: a file of garbage lines (or a decompression bomb of them)
#: would otherwise fill memory with error messages, and nobody reads past the first screens.
MAX_ERRORS = 1000


class _TooManyErrors(Exception):
    """Raised through a reader to end the pass once MAX_ERRORS are collected."""


def iter_sources(sources: Sequence[str], fmt: str, errors: list[TraceFormatError]) -> Iterator[Trajectory]:
    """Every valid trajectory of every source; each violation is appended to `errors` (at most
    MAX_ERRORS, then the pass ends with a note saying so)."""
    reader = FORMATS[fmt].read

    def sink(error: TraceFormatError) -> None:
        errors.append(error)
        if len(errors) >= MAX_ERRORS:
            raise _TooManyErrors(error.path)

    seen: dict[str, str] = {}
    try:
        for src in sources:
            for traj in reader(str(src), sink):
                if traj.id in seen:
                    sink(
                        TraceFormatError(
                            str(src),
                            traj.rows[0].line,
                            f"conversation id {traj.id!r} already appears in {seen[traj.id]}; ids must be unique",
                            conversation=traj.id,
                        )
                    )
                    continue
                seen[traj.id] = str(src)
                yield traj
    except _TooManyErrors as stop:
        errors.append(ErrorCapReached(str(stop), MAX_ERRORS))


def read_sources(sources: Sequence[str], fmt: str) -> Iterator[Trajectory]:
    """All trajectories; raises `TraceValidationErrors` listing every violation once the
    sources are read (nothing after the first error is yielded)."""
    errors: list[TraceFormatError] = []
    for traj in iter_sources(sources, fmt, errors):
        if not errors:
            yield traj
    if errors:
        raise TraceValidationErrors(errors)


def validate_sources(
    sources: Sequence[str], fmt: str, *, progress: Progress | None = None
) -> tuple[int, int, list[TraceFormatError]]:
    """(trajectories, client turns, errors) of a full pass that collects every error;
    `progress` counts the valid client turns read."""
    errors: list[TraceFormatError] = []
    n_traj = n_turns = 0
    for traj in iter_sources(sources, fmt, errors):
        n_traj += 1
        turns = len(traj.client_indices())
        n_turns += turns
        if progress is not None:
            progress.advance(turns)
    return n_traj, n_turns, errors
