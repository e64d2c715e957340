"""Which format a record looks like: one message when `--format` names the wrong one.

A file read with the wrong `--format` fails on every record, and twenty identical lines ("missing
`messages`") say neither what the file holds nor what to pass. So when a file's first error
comes, before any of its conversations was read, its first record is looked at: if it has the
shape of another format and not the one given, the file is reported once, with the keys it has
and the `--format` that reads them, and the rest of it is skipped. A file of the right format
with real errors keeps its errors, one per line, as before.

The shapes are the formats' required top-level keys (docs/dataset-format.md); the order below
goes from the most specific marker to the most generic, since the message-based formats all
carry `messages`.
"""

from __future__ import annotations

from typing import Any

from ..errors import TraceFormatError
from ..model import WORKFLOW_ID
from .openai_messages import iter_records

#: What one record of each format is, in a few words (docs/dataset-format.md has the full rules).
SHAPES = {
    "mlperf-jsonl": "one message per record",
    "openai-messages": 'one conversation per record, {"messages": [...], "tools": [...]}',
    "snapshots": "growing snapshots of each conversation, with conversation_idx",
    "workflow": "one sim_NNN support conversation per record, with its system prompt",
    "atif": "one ATIF trajectory per document, with steps",
    "mini-swe-agent": "one mini-swe-agent trajectory per document",
}


def looks_like(obj: dict[str, Any]) -> str | None:
    """The format whose records have `obj`'s shape, or None when none does."""
    version = obj.get("schema_version")
    if isinstance(version, str) and version.upper().startswith("ATIF"):
        return "atif"
    kind = obj.get("trajectory_format")
    if isinstance(kind, str) and kind.startswith("mini-swe-agent"):
        return "mini-swe-agent"
    if "messages" in obj:
        if "conversation_idx" in obj:
            return "snapshots"
        cid = obj.get("conversation_id")
        if isinstance(cid, str) and WORKFLOW_ID.match(cid) and isinstance(obj.get("system"), str):
            return "workflow"
        return "openai-messages"
    if "role" in obj and ("turn" in obj or "conversation_id" in obj):
        return "mlperf-jsonl"
    return None


def fits(fmt: str, obj: dict[str, Any]) -> bool:
    """Could `obj` be a record of `fmt` at all (with errors of its own)? Only the keys that tell
    formats apart are looked at; the format's reader checks everything else."""
    if fmt == "mlperf-jsonl":
        return "role" in obj or ("conversation_id" in obj and "messages" not in obj)
    if fmt == "atif":
        return "steps" in obj or "schema_version" in obj
    if fmt == "mini-swe-agent":
        return "trajectory_format" in obj or ("messages" in obj and "info" in obj)
    return "messages" in obj  # snapshots, workflow, openai-messages


#: how many unreadable records `first_record` passes over before it gives up: a file whose first
#: hundred records all fail is not told apart by its shape (and a zstd bomb of bad lines is never
#: read to its end here)
FIRST_LOOK = 100


class _GaveUp(Exception):
    pass


def first_record(path: str) -> dict[str, Any] | None:
    """The first record of `path` that parses among its first `FIRST_LOOK`, or None."""
    errors = 0

    def ignore(_: TraceFormatError) -> None:
        nonlocal errors
        errors += 1
        if errors >= FIRST_LOOK:
            raise _GaveUp

    try:
        for _, _, obj in iter_records(path, ignore):
            return obj
    except _GaveUp:
        pass
    return None


def wrong_format(path: str, fmt: str) -> TraceFormatError | None:
    """One error for a file whose records have another format's shape than `fmt`'s: what its
    first record holds and the `--format` that reads it; None when `fmt` may well be right."""
    obj = first_record(path)
    if obj is None or fits(fmt, obj):
        return None
    other = looks_like(obj)
    if other is None or other == fmt:
        return None
    keys = ", ".join(list(obj)[:8]) + (", …" if len(obj) > 8 else "")
    return TraceFormatError(
        path,
        None,
        f"not --format {fmt} ({SHAPES[fmt]}): its first record has the keys {keys}, which make --format "
        f"{other} ({SHAPES[other]}); pass --format {other}",
    )
