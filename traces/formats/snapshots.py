"""`snapshots`: cumulative OpenAI-messages snapshots, the form the workflow simulations are dumped in.

Each JSONL line is `{conversation_id, conversation_idx, messages, tools, metadata}`, the whole
history up to a checkpoint; one conversation appears many times with growing `messages`. Like the
reference converter (mlcommons/endpoints `scripts/convert_agentic_snapshot.py`) we keep the
snapshot with the highest `conversation_idx` per id (on a tie or a missing index, the later line),
emit conversations sorted by id (so the FIFO order matches the reference's flat file), merge
consecutive user messages and parallel tool results (see `openai_messages.convert_messages`).
Unlike it we keep `reasoning_content`, `delay_seconds`, `intent_codes` and `name`, and validate.

Memory: only the raw bytes of the best snapshot per id are held, so memory follows the final
dataset, not the quadratic sum of all snapshots.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from ..errors import ErrorSink, TraceFormatError
from ..model import Trajectory
from .openai_messages import iter_records, messages_trajectory
from .validate import is_printable_ascii


def read(path: str, sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield the last snapshot of every conversation, sorted by id; report violations to `sink`."""
    best: dict[str, tuple[tuple[int, int], int | None, str, bytes]] = {}
    order = 0
    for line, base, obj in iter_records(path, sink):
        order += 1
        cid = obj.get("conversation_id")
        if not isinstance(cid, str) or not is_printable_ascii(cid):
            sink(
                TraceFormatError(
                    path,
                    line,
                    f"conversation_id must be a non-empty printable ASCII string, got {cid!r}",
                    where=f"{base}.conversation_id" if base else "conversation_id",
                )
            )
            continue
        idx = obj.get("conversation_idx")
        if idx is not None and (isinstance(idx, bool) or not isinstance(idx, int)):
            sink(
                TraceFormatError(
                    path,
                    line,
                    f"conversation_idx must be an integer, got {idx!r}",
                    conversation=cid,
                    where=f"{base}.conversation_idx" if base else "conversation_idx",
                )
            )
            continue
        key = (idx if idx is not None else -1, order)
        if cid not in best or key >= best[cid][0]:
            # keep bytes, not the parsed object: parsed dicts of every conversation cost several
            # times the file size
            best[cid] = (key, line, base, orjson.dumps(obj))
    if not best:
        sink(TraceFormatError(path, None, "the file holds no snapshots; expected one JSON object per line"))
        return
    for cid in sorted(best):
        _, line, base, raw = best[cid]
        obj = orjson.loads(raw)
        traj = messages_trajectory(
            obj.get("messages"),
            path=path,
            line=line,
            base=base,
            conversation=cid,
            sink=sink,
            tools=obj.get("tools") or None,
        )
        if traj is not None:
            yield traj
