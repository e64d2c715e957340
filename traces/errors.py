"""The one error family of the traces package.

Every message says what is wrong, where (file and line or JSON path, conversation, turn) and,
where it is not obvious, how to fix it, so that a maintainer can repair a dataset from the
message alone.
"""

from __future__ import annotations

from collections.abc import Callable


class TraceError(Exception):
    """Base error of the traces package; `cli.main` prints it as `Error: …` with exit code 1."""


class TraceFormatError(TraceError):
    """A violation of an input format's rules, located in its source file."""

    def __init__(
        self,
        path: str,
        line: int | None,
        rule: str,
        *,
        conversation: str | None = None,
        turn: int | None = None,
        where: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.rule = rule
        self.conversation = conversation
        self.turn = turn
        self.where = where
        super().__init__(self._format())

    def _format(self) -> str:
        loc = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.where:
            loc += f" ({self.where})"
        parts = [loc]
        if self.conversation is not None:
            ctx = f"conversation {self.conversation}"
            if self.turn is not None:
                ctx += f" turn {self.turn}"
            parts.append(ctx)
        parts.append(self.rule)
        return ": ".join(parts)


class ErrorCapReached(TraceFormatError):
    """The note that ends a pass which stopped collecting errors (`sources.MAX_ERRORS`): there
    may be more, and they are not counted."""

    def __init__(self, path: str, count: int) -> None:
        super().__init__(path, None, f"stopped reading after {count:,} errors; fix these first, then validate again")


#: Errors printed one line each; the rest are only counted. A wrong --format turns every line
#: of a file into an error, and tens of thousands of lines help nobody: the first screen does.
SHOWN_ERRORS = 20


def error_count(errors: list[TraceFormatError]) -> int:
    """The violations in `errors`, without the note of a pass that stopped early."""
    return sum(not isinstance(e, ErrorCapReached) for e in errors)


def error_lines(errors: list[TraceFormatError], shown: int = SHOWN_ERRORS) -> list[str]:
    """The first `shown` errors, one line each; then one line counting the rest, and the note
    of a pass that stopped early."""
    found = [e for e in errors if not isinstance(e, ErrorCapReached)]
    lines = [str(e) for e in found[:shown]]
    rest = len(found) - shown
    if rest > 0:
        lines.append(f"… and {rest:,} more error{'s' if rest > 1 else ''}; first fix the ones above")
    lines += [str(e) for e in errors if isinstance(e, ErrorCapReached)]
    return lines


class TraceValidationErrors(TraceError):
    """Several format errors found in one pass: the first `SHOWN_ERRORS` in the message, the
    rest counted (`traces validate` prints them the same way)."""

    def __init__(self, errors: list[TraceFormatError]) -> None:
        self.errors = errors
        lines = "\n".join(error_lines(errors))
        super().__init__(f"{error_count(errors):,} error(s) in the input:\n{lines}")


class ShardError(TraceError):
    """A shard folder that is missing, incomplete or does not match its manifest."""


#: Where a reader reports each violation it finds (collected, so `traces validate` lists them all).
ErrorSink = Callable[[TraceFormatError], None]
