"""Reading every trajectory of a list of inputs, with the rules that span files.

Inputs (files, folders, `hf:org/name`) become files first (`traces.inputs.resolve`); a file that is not
trace data at all (a gzip or zip file, UTF-16 text, …) is reported once, by what it is
(`traces.inputs.sniff`), instead of as a screen of bad lines. Readers check one file at a time; ids must
also be unique across all the sources of one build. Both `traces validate` (which lists every
error) and `traces build` (which stops at the end of a pass with errors) go through `iter_sources`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ..errors import ErrorCapReached, ErrorSink, TraceFormatError, TraceValidationErrors
from ..inputs import TABULAR, check_table, resolve_input, sniff
from ..model import Trajectory
from ..progress import Progress
from .registry import FORMATS, Format
from .shape import wrong_format

#: A pass stops after this many errors: a file of garbage lines (or a decompression bomb of them)
#: would otherwise fill memory with error messages, and nobody reads past the first screens.
MAX_ERRORS = 1000


class _TooManyErrors(Exception):
    """Raised through a reader to end the pass once MAX_ERRORS are collected."""


def iter_sources(sources: Sequence[str], fmt: str, errors: list[TraceFormatError]) -> Iterator[Trajectory]:
    """Every valid trajectory of every input; each violation is appended to `errors` (at most
    MAX_ERRORS, then the pass ends with a note saying so). An input that names no files (a
    missing path, an `hf:` id not in the local cache) raises `TraceError`."""
    form = FORMATS[fmt]
    inputs = [resolve_input(str(spec)) for spec in sources]

    def sink(error: TraceFormatError) -> None:
        errors.append(error)
        if len(errors) >= MAX_ERRORS:
            raise _TooManyErrors(error.path)

    seen: dict[str, str] = {}
    try:
        for files in inputs:
            readable = [f for f in files if _is_trace_data(f, sink)]
            for traj in _read_input(form, readable, sink):
                if traj.id in seen:
                    sink(
                        TraceFormatError(
                            traj.source,
                            traj.rows[0].line,
                            f"conversation id {traj.id!r} already appears in {seen[traj.id]}; ids must be unique",
                            conversation=traj.id,
                        )
                    )
                    continue
                seen[traj.id] = traj.source
                yield traj
    except _TooManyErrors as stop:
        errors.append(ErrorCapReached(str(stop), MAX_ERRORS))


def _is_trace_data(path: str, sink: ErrorSink) -> bool:
    """Is `path` a file the readers can read? Else say once what it is (gzip, zip, a shard file…)."""
    try:
        kind = sniff(path)
        if kind in TABULAR:
            check_table(path, kind)
    except TraceFormatError as exc:
        sink(exc)
        return False
    return True


class _WrongFormat(Exception):
    """Raised through a reader to skip the rest of a file whose records have another format's shape."""


def _once_if_wrong_format(form: Format, first_file: str, sink: ErrorSink) -> tuple[ErrorSink, Callable[[], None]]:
    """A sink that, at the first error of a file none of whose conversations was read yet, asks
    whether the file is of another format (`shape.wrong_format`): if so it reports that once and
    skips the file, instead of one identical error per record. The second value marks that a
    conversation was read, after which errors are the file's own."""
    state = {"read": False, "asked": False}

    def guarded(error: TraceFormatError) -> None:
        if not state["read"] and not state["asked"]:
            state["asked"] = True
            wrong = wrong_format(first_file, form.name)
            if wrong is not None:
                sink(wrong)
                raise _WrongFormat
        sink(error)

    def mark_read() -> None:
        state["read"] = True

    return guarded, mark_read


def _read_input(form: Format, files: list[str], sink: ErrorSink) -> Iterator[Trajectory]:
    """The trajectories of one input's files: as one sequence of records when the format reads
    conversations across files (a sharded table of flat rows), else file by file."""
    groups = [files] if form.read_files is not None and len(files) > 1 else [[f] for f in files]
    for group in groups:
        if not group:
            continue
        guarded, mark_read = _once_if_wrong_format(form, group[0], sink)
        reader = form.read_files(group, guarded) if len(group) > 1 and form.read_files else form.read(group[0], guarded)
        try:
            for traj in reader:
                mark_read()
                yield traj
        except _WrongFormat:
            continue


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
