"""`mlperf-jsonl`: the official flat format (docs/dataset-format.md), one message per line, read and write.

The same rows are read from a Parquet or Arrow table with one row per message and the fields as
columns (`traces.inputs.tabular`), also from a table saved in several files (`read_files`). Reading
streams the file and validates one conversation at a time, so memory follows the largest
trajectory. Writing puts `system` and `tools` on the first user row only (the layout of the
reference's published examples) and keeps every extra field a row came with.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import ErrorSink, TraceFormatError
from ..inputs import iter_objects
from ..model import Row, Trajectory
from .validate import FlatRow, build_trajectory, is_printable_ascii


def read(path: str, sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield the file's trajectories in file order; report each violation to `sink`."""
    return read_files([path], sink)


def read_files(paths: Sequence[str], sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield the trajectories of files that hold one sequence of rows, in order: a table saved
    in shards (`save_to_disk`, the Hub's `train-0000K-of-0000N.parquet`) cuts anywhere, so a
    conversation may go on from one file into the next. Each violation goes to `sink` with the
    file and line (or row) of the row it is about."""
    current: str | None = None
    rows: list[FlatRow] = []
    seen: dict[str, tuple[str, int]] = {}

    def flush() -> Trajectory | None:
        if current is None or not rows:
            return None
        return build_trajectory(rows[0].path or paths[0], current, rows, sink)

    for path in paths:
        any_row = False
        reported = 0

        def report(error: TraceFormatError) -> None:
            nonlocal reported
            reported += 1
            sink(error)

        for lineno, obj in iter_objects(path, report):
            if obj.get("_type") == "dataset_metadata":
                continue
            any_row = True
            cid = obj.get("conversation_id")
            if not isinstance(cid, str) or not is_printable_ascii(cid):
                sink(
                    TraceFormatError(
                        path, lineno, f"conversation_id must be a non-empty printable ASCII string, got {cid!r}"
                    )
                )
                continue
            if cid != current:
                traj = flush()
                if traj is not None:
                    yield traj
                if cid in seen:
                    first_path, first_line = seen[cid]
                    at = f"line {first_line}" if first_path == path else f"{first_path}:{first_line}"
                    sink(
                        TraceFormatError(
                            path,
                            lineno,
                            f"rows of one conversation must be contiguous; it started at {at}",
                            conversation=cid,
                        )
                    )
                    current, rows = None, []
                    continue
                seen[cid] = (path, lineno)
                current, rows = cid, []
            rows.append(FlatRow(obj, lineno, path=path))
        if not any_row and not reported:  # an unreadable file or over-long lines say more than this
            sink(
                TraceFormatError(
                    path,
                    None,
                    "the file holds no data rows; expected one JSON object per line (or one table row per message)",
                )
            )
    traj = flush()
    if traj is not None:
        yield traj


def row_to_flat(conversation_id: str | None, row: Row, *, with_context: bool) -> dict[str, Any]:
    """The official flat form of a row; `with_context` adds `system` and `tools` to it.

    Shards store rows without the id (`conversation_id=None`): it is a column of the shard.
    """
    out: dict[str, Any] = {} if conversation_id is None else {"conversation_id": conversation_id}
    out.update(turn=row.turn, role=row.role)
    for key in ("content", "reasoning_content", "name"):
        value = getattr(row, key)
        if value is not None:
            out[key] = value
    if row.tool_calls is not None:
        out["tool_calls"] = [dict(c) for c in row.tool_calls]
    if row.tool_results is not None:
        out["tool_results"] = [dict(r) for r in row.tool_results]
    if row.delay_seconds is not None:
        out["delay_seconds"] = row.delay_seconds
    if row.intent_codes is not None:
        out["intent_codes"] = list(row.intent_codes)
    out.update(row.params)
    out.update(row.extra)
    if with_context:
        if row.system is not None:
            out["system"] = row.system
        if row.tools is not None:
            out["tools"] = list(row.tools)
    return out


def to_records(traj: Trajectory) -> list[dict[str, Any]]:
    """The flat rows of a trajectory, each with its conversation's system prompt and tools."""
    return [row_to_flat(traj.id, row, with_context=True) for row in traj.rows]


def from_records(records: list[dict[str, Any]], path: str, sink: ErrorSink) -> Trajectory | None:
    """What `read` makes of written rows (`traces export` compares it with what was written)."""
    cid = records[0].get("conversation_id") if records else None
    return build_trajectory(path, cid, [FlatRow(r) for r in records], sink) if isinstance(cid, str) else None
