"""The one error family of the traces package.

Every message says what is wrong, where (file and line or JSON path, conversation, turn) and,
where it is not obvious, how to fix it, so that a maintainer can repair a dataset from the
message alone.
"""

from __future__ import annotations


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


class TraceValidationErrors(TraceError):
    """Several format errors found in one pass (`traces validate` reports them all)."""

    def __init__(self, errors: list[TraceFormatError]) -> None:
        self.errors = errors
        head = "\n".join(str(e) for e in errors[:20])
        more = f"\n… and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} error(s) in the input:\n{head}{more}")


class ShardError(TraceError):
    """A shard folder that is missing, incomplete or does not match its manifest."""
