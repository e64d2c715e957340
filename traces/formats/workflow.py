"""`workflow`: customer-support workflow traces, one JSON object per conversation (read and write).

The format maintainers export their Workato-style workflow simulations to; data_cards/
workflow-format.md is its definition. A record is
`{"conversation_id": "sim_NNN", "system": "...", "tools": [...], "messages": [...]}` with OpenAI
messages; assistant messages may carry `intent_codes` (the inline-accuracy ground truth,
docs/accuracy.md), user and tool messages `delay_seconds`. `.jsonl` holds one record per line; `.json` one
record or an array of them.

The format is stricter than the generic ones because it feeds scoring: ids must match `sim_NNN`
(or the turns would be scored as coding), the system prompt is required (salting needs it) and
lives only in `system`, and intent codes look like `I042`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..canonical import canonical_json
from ..errors import ErrorSink, TraceError, TraceFormatError
from ..model import WORKFLOW_ID, Trajectory
from .openai_messages import messages_trajectory, read_conversations, row_messages

INTENT_CODE = re.compile(r"^I\d{3}$", re.IGNORECASE)
FIELDS = frozenset({"conversation_id", "system", "tools", "messages", "metadata"})


def _check_record(path: str, line: int | None, base: str, obj: dict[str, Any], sink: ErrorSink) -> str | None:
    """The record's id if its top-level fields follow the workflow format, else None (reported)."""

    def at(key: str) -> str:
        return f"{base}.{key}" if base else key

    cid = obj.get("conversation_id")
    if not isinstance(cid, str) or not WORKFLOW_ID.match(cid):
        sink(
            TraceFormatError(
                path,
                line,
                f"conversation_id must look like sim_NNN (docs/accuracy.md: those are scored as workflow), got {cid!r}",
                where=at("conversation_id"),
            )
        )
        return None
    ok = True

    def fail(key: str, rule: str) -> None:
        nonlocal ok
        ok = False
        sink(TraceFormatError(path, line, rule, conversation=cid, where=at(key)))

    system = obj.get("system")
    if not isinstance(system, str) or not system.strip():
        fail(
            "system",
            "system must be a non-empty string: the business rules every turn is prompted with (salting needs it, docs/salting.md)",
        )
    if obj.get("tools") is not None and not isinstance(obj["tools"], list):
        fail("tools", "tools must be a list of OpenAI function tools")
    if obj.get("metadata") is not None and not isinstance(obj["metadata"], dict):
        fail("metadata", "metadata must be an object")
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        fail("messages", "messages must be a non-empty list of user, assistant and tool messages")
        return None
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue  # reported by the converter
        if msg.get("role") in ("system", "developer"):
            fail(f"messages[{i}]", "the system prompt belongs in the top-level `system` field, not in messages")
        codes = msg.get("intent_codes")
        if codes is not None:
            if msg.get("role") != "assistant":
                fail(f"messages[{i}].intent_codes", "intent_codes are only allowed on assistant messages")
            elif not isinstance(codes, list) or not all(isinstance(c, str) and INTENT_CODE.match(c) for c in codes):
                fail(f"messages[{i}].intent_codes", f"intent_codes must be a list of codes like 'I042', got {codes!r}")
        if msg.get("delay_seconds") is not None and msg.get("role") == "assistant":
            fail(
                f"messages[{i}].delay_seconds",
                "delay_seconds belongs on user and tool messages (the wait before that turn), not on assistant messages",
            )
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        fail(unknown[0], f"unknown field(s) {', '.join(unknown)}; put extra information under `metadata`")
    return cid if ok else None


def record_trajectory(
    obj: dict[str, Any], path: str, line: int | None, base: str, sink: ErrorSink
) -> Trajectory | None:
    """The trajectory of one workflow record; None (after reporting) if it breaks a rule."""
    cid = _check_record(path, line, base, obj, sink)
    if cid is None:
        return None
    return messages_trajectory(
        obj["messages"],
        path=path,
        line=line,
        base=base,
        conversation=cid,
        sink=sink,
        system=obj["system"],
        tools=obj.get("tools") or None,
    )


def read(path: str, sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield each workflow conversation in file order; report each violation to `sink`."""
    return read_conversations(path, sink, record_trajectory)


def to_record(traj: Trajectory) -> dict[str, Any]:
    """The workflow record of a trajectory; raises TraceError if the format cannot express it."""
    if not WORKFLOW_ID.match(traj.id):
        raise TraceError(f"conversation {traj.id}: the workflow format needs ids like sim_NNN")
    system = traj.system
    if not system:
        raise TraceError(f"conversation {traj.id}: the workflow format needs a system prompt")
    client_tools = {canonical_json(list(r.tools)) for r in traj.rows if r.tools is not None and r.is_client}
    first_tools = traj.effective_tools()[0]
    if len(client_tools) > 1 or (client_tools and first_tools is None):
        raise TraceError(
            f"conversation {traj.id}: the tools change between turns; the workflow format has one tool list"
        )
    messages = [m for row in traj.rows for m in row_messages(row, client_delays_only=True)]
    record: dict[str, Any] = {"conversation_id": traj.id, "system": system, "messages": messages}
    if first_tools is not None:
        record["tools"] = list(first_tools)
    return record
