"""`openai-messages`: generic JSONL, one conversation per line, and the shared message converter.

A line is `{"messages": [...], "tools": [...]}` with OpenAI chat messages; the id is the line's
`conversation_id` (else `id`, else `<file stem>-L<line>`). A `.json` file may instead hold one such
object or an array of them, and a Parquet or Arrow table one per row (a `messages` column of
message structs or JSON text, `tools` likewise; `traces.inputs.tabular`).

`convert_messages` is the one mapping from OpenAI messages to official flat rows (docs/dataset-format.md) that the
message-based formats (snapshots, workflow, mini-swe-agent) share:

- a leading `system` (or `developer`) message becomes the trajectory's system prompt; a later one
  cannot be replayed (docs/requests.md has one system prompt) and is an error;
- consecutive `user` messages merge into one row joined by a blank line (the reference
  converter's rule, so prompts stay byte-identical to its output); their delays add up;
- consecutive `tool` messages merge into one tool row with one `tool_results` entry each; their
  delay is the largest one, since parallel calls run at the same time;
- a tool message without `tool_call_id` answers the preceding assistant's call at the same
  position; a tool call without `id` gets `call_<turn>_<k>` (k from 0), so ids are deterministic;
  complete tool calls and tool results keep the source's key order (so does an export and
  rebuild, docs/dataset-format.md);
- list-of-parts content is joined with newlines (as vLLM does); non-text parts are an error;
- kept per message: content, name, reasoning_content (or `reasoning`), tool_calls,
  delay_seconds, intent_codes. Transport noise (`extra`, `function_call`, `refusal`, …) is
  dropped, so shards do not carry it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ..errors import ErrorSink, TraceFormatError
from ..inputs import is_table, iter_objects, read_bytes
from ..model import Row, Trajectory, content_text
from .validate import FlatRow, build_trajectory

#: Message keys copied onto flat rows; everything else in a message is dropped.
_KEPT = ("name", "delay_seconds", "intent_codes")
_SYSTEM_ROLES = ("system", "developer")

Record = tuple[int | None, str, dict[str, Any]]


def _join(base: str, key: str) -> str:
    return f"{base}.{key}" if base else key


def is_json_document(path: str) -> bool:
    """`.json` (optionally `.zst`) files hold one document; everything else is JSON Lines."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".zst":
        suffixes = suffixes[:-1]
    return bool(suffixes) and suffixes[-1] == ".json"


def iter_records(path: str, sink: ErrorSink) -> Iterator[Record]:
    """(line or None, JSON path prefix, object) of every record of a `.json` or JSONL file, or
    (row, "", object) of every row of a Parquet or Arrow table (`traces.inputs.tabular`)."""
    if is_table(path):
        for row, obj in iter_objects(path, sink):
            yield row, "", obj
        return
    if is_json_document(path):
        try:
            raw = read_bytes(path)
        except TraceFormatError as exc:
            sink(exc)
            return
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            sink(TraceFormatError(path, None, f"not valid JSON ({exc}); a .json file must hold one JSON document"))
            return
        if isinstance(doc, dict):
            yield None, "", doc
        elif isinstance(doc, list):
            for i, item in enumerate(doc):
                if isinstance(item, dict):
                    yield None, f"[{i}]", item
                else:
                    sink(
                        TraceFormatError(
                            path,
                            None,
                            f"each array item must be a JSON object, got {type(item).__name__}",
                            where=f"[{i}]",
                        )
                    )
        else:
            sink(
                TraceFormatError(
                    path, None, f"the document must be a JSON object or an array of objects, got {type(doc).__name__}"
                )
            )
        return
    for lineno, obj in iter_objects(path, sink):
        yield lineno, "", obj


def file_stem(path: str) -> str:
    """`a/b/django__django-1.traj.json.zst` → `django__django-1`."""
    name = Path(path).name
    for suffix in (".zst", ".jsonl", ".json", ".parquet", ".arrow", ".traj"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name


def text_content(value: Any) -> str | None:
    """Message content as text (`model.content_text`), None kept as None."""
    return None if value is None else content_text(value)


def _valid_delay(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _tool_calls(raw: list[Any], turn: int) -> list[Any]:
    """Tool calls with deterministic ids filled in; malformed entries are left to validation."""
    calls: list[Any] = []
    for k, call in enumerate(raw):
        if isinstance(call, dict) and call.get("id") and "type" in call:
            call = dict(call)  # complete: kept as recorded, key order included
        elif isinstance(call, dict):
            rest = {key: v for key, v in call.items() if key not in ("id", "type")}
            call = {"id": call.get("id") or f"call_{turn}_{k}", "type": call.get("type", "function"), **rest}
        calls.append(call)
    return calls


def convert_messages(
    messages: Any,
    *,
    path: str,
    line: int | None,
    base: str,
    conversation: str,
    sink: ErrorSink,
    system: str | None = None,
    tools: Any = None,
    wheres: list[str] | None = None,
) -> list[FlatRow] | None:
    """OpenAI messages → flat rows of one conversation; None (after reporting) if unusable.

    `wheres` names each message's place in the source when the messages were derived from
    another structure (ATIF steps); by default it is `messages[i]` under `base`."""
    where_msgs = _join(base, "messages")

    def place(i: int) -> str:
        return wheres[i] if wheres is not None else f"{where_msgs}[{i}]"

    def fail(i: int | None, rule: str) -> None:
        where = (where_msgs if wheres is None else base or None) if i is None else place(i)
        sink(TraceFormatError(path, line, rule, conversation=conversation, where=where))

    if not isinstance(messages, list) or not messages:
        fail(None, "messages must be a non-empty list of OpenAI chat messages")
        return None
    rows: list[FlatRow] = []
    started = False
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            fail(i, f"each message must be an object, got {type(msg).__name__}")
            return None
        role = msg.get("role")
        try:
            content = text_content(msg.get("content"))
        except ValueError as exc:
            fail(i, str(exc))
            return None
        if role in _SYSTEM_ROLES:
            if started or system is not None:
                fail(
                    i,
                    "only one system message is supported, and it must come first (docs/dataset-format.md: one system prompt per trajectory)",
                )
                return None
            system = content or ""
            continue
        if role not in ("user", "assistant", "tool"):
            fail(i, f"role must be system, user, assistant or tool; got {role!r}")
            return None
        started = True
        prev = rows[-1].data if rows else None
        where = place(i)
        if role == "user" and prev is not None and prev["role"] == "user":
            # the reference converter's collapse rule, kept exactly so prompts match its output
            prev["content"] = f"{prev.get('content') or ''}\n\n{content or ''}".strip()
            delay = msg.get("delay_seconds")
            if delay is None:
                pass
            elif not _valid_delay(delay):
                prev["delay_seconds"] = delay  # let validation report it with the turn
            elif _valid_delay(prev.get("delay_seconds", 0)):
                prev["delay_seconds"] = prev.get("delay_seconds", 0) + delay
            continue
        if role == "tool":
            if prev is not None and prev["role"] == "tool":
                row = prev
            else:
                row = {"role": "tool", "tool_results": []}
                rows.append(FlatRow(row, line, where))
            k = len(row["tool_results"])
            call_id = msg.get("tool_call_id")
            if not call_id:
                owner = rows[-2].data if len(rows) >= 2 else None
                calls = owner.get("tool_calls") if owner and owner["role"] == "assistant" else None
                if not calls or k >= len(calls) or not isinstance(calls[k], dict):
                    fail(
                        i,
                        f"tool message has no tool_call_id and the assistant message before it has no call number {k}; add tool_call_id",
                    )
                    return None
                call_id = calls[k]["id"]
            result: dict[str, Any] = {"tool_call_id": call_id, "content": content if content is not None else ""}
            if isinstance(msg.get("name"), str):
                result["name"] = msg["name"]
            if msg.get("tool_call_id"):  # the source's own key order (docs/dataset-format.md)
                result = {k: result[k] for k in sorted(result, key=list(msg).index)}
            row["tool_results"].append(result)
            delay = msg.get("delay_seconds")
            if _valid_delay(delay):
                if _valid_delay(row.get("delay_seconds", 0)):
                    row["delay_seconds"] = max(row.get("delay_seconds", 0), delay)
            elif delay is not None:
                row["delay_seconds"] = delay  # let validation report it with the turn
            continue
        turn = len(rows) + 1
        data: dict[str, Any] = {"role": role}
        if content is not None:
            data["content"] = content
        for key in _KEPT:
            if msg.get(key) is not None:
                data[key] = msg[key]
        if role == "assistant":
            reasoning = msg.get("reasoning_content")
            if reasoning is None and isinstance(msg.get("reasoning"), str):
                reasoning = msg["reasoning"]
            if reasoning is not None:
                data["reasoning_content"] = reasoning
            if msg.get("tool_calls"):
                raw_calls = msg["tool_calls"]
                data["tool_calls"] = _tool_calls(raw_calls, turn) if isinstance(raw_calls, list) else raw_calls
            if data.get("content") == "" and data.get("tool_calls"):
                del data["content"]  # docs/requests.md: a tool-calling message without text omits content
        rows.append(FlatRow(data, line, where))
    if not rows:
        fail(None, "messages hold only a system message; a trajectory needs at least one user message")
        return None
    for turn, fr in enumerate(rows, start=1):
        fr.data["turn"] = turn
    first = rows[0].data
    if system is not None:
        first["system"] = system
    if tools is not None:
        first["tools"] = tools
    return rows


def messages_trajectory(
    messages: Any, *, path: str, line: int | None, base: str, conversation: str, sink: ErrorSink, **kw: Any
) -> Trajectory | None:
    """`convert_messages` then docs/dataset-format.md validation: the last step of every messages-based reader."""
    rows = convert_messages(messages, path=path, line=line, base=base, conversation=conversation, sink=sink, **kw)
    return None if rows is None else build_trajectory(path, conversation, rows, sink)


def derived_id(path: str, line: int | None, base: str) -> str:
    """An id from a record's place when it names none: `<file stem>-L<line>` or `-<index>`."""
    stem = re.sub(r"[^\x20-\x7e]", "_", file_stem(path)) or "conversation"
    if line is not None:
        return f"{stem}-L{line}"
    return f"{stem}-{base.strip('[]')}" if base else stem


def record_id(obj: dict[str, Any], path: str, line: int | None, base: str) -> Any:
    """The conversation id of a record: `conversation_id`, else `id`, else derived from its place."""
    for key in ("conversation_id", "id"):
        if obj.get(key) is not None:
            return obj[key]
    return derived_id(path, line, base)


def record_trajectory(
    obj: dict[str, Any], path: str, line: int | None, base: str, sink: ErrorSink
) -> Trajectory | None:
    """The trajectory of one `{conversation_id, messages, tools}` record; None (after reporting)
    if it breaks a rule."""
    cid = record_id(obj, path, line, base)
    if not isinstance(cid, str):
        sink(
            TraceFormatError(
                path, line, f"conversation_id must be a string, got {cid!r}", where=_join(base, "conversation_id")
            )
        )
        return None
    if "messages" not in obj:
        sink(
            TraceFormatError(
                path,
                line,
                'missing `messages`: each record is {"messages": [...], "tools": [...]}',
                conversation=cid,
                where=base or None,
            )
        )
        return None
    return messages_trajectory(
        obj["messages"], path=path, line=line, base=base, conversation=cid, sink=sink, tools=obj.get("tools")
    )


RecordReader = Callable[[dict[str, Any], str, int | None, str, ErrorSink], Trajectory | None]


def read_conversations(path: str, sink: ErrorSink, record_trajectory: RecordReader) -> Iterator[Trajectory]:
    """Each record's trajectory, in file order, for a format of one conversation per record;
    each violation goes to `sink`, and a file without a record is one."""
    any_record = False
    for line, base, obj in iter_records(path, sink):
        any_record = True
        traj = record_trajectory(obj, path, line, base, sink)
        if traj is not None:
            yield traj
    if not any_record:
        sink(TraceFormatError(path, None, "the file holds no conversations; expected one JSON object per line"))


def read(path: str, sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield one trajectory per record, in file order; report each violation to `sink`."""
    return read_conversations(path, sink, record_trajectory)


def row_messages(row: Row, *, client_delays_only: bool = False) -> list[dict[str, Any]]:
    """The OpenAI messages of one flat row (the inverse of `convert_messages`): a tool row is one
    message per result, its delay on the first; other rows one message with content, name,
    reasoning_content, tool_calls, intent_codes and delay_seconds (client rows' delays only
    when `client_delays_only`)."""
    if row.role == "tool":
        out = []
        for k, res in enumerate(row.tool_results or ()):
            msg: dict[str, Any] = {"role": "tool", **res}
            if k == 0 and row.delay_seconds is not None:
                msg["delay_seconds"] = row.delay_seconds
            out.append(msg)
        return out
    msg = {"role": row.role}
    for key in ("content", "name", "reasoning_content"):
        if getattr(row, key) is not None:
            msg[key] = getattr(row, key)
    if row.tool_calls is not None:
        msg["tool_calls"] = [dict(c) for c in row.tool_calls]
    if row.intent_codes is not None:
        msg["intent_codes"] = list(row.intent_codes)
    if row.delay_seconds is not None and (row.is_client or not client_delays_only):
        msg["delay_seconds"] = row.delay_seconds
    return [msg]


def to_record(traj: Trajectory) -> dict[str, Any]:
    """The `{conversation_id, messages, tools}` record of a trajectory: the system prompt as the
    first message, one tool list (the first user row's). What a record cannot hold (generation
    parameters, extra fields, a tool list that changes mid-conversation) is left out; `traces
    export` counts it."""
    messages: list[dict[str, Any]] = []
    if traj.system is not None:
        messages.append({"role": "system", "content": traj.system})
    for row in traj.rows:
        messages += row_messages(row)
    record: dict[str, Any] = {"conversation_id": traj.id, "messages": messages}
    tools = next((r.tools for r in traj.rows if r.role == "user"), None)
    if tools is not None:
        record["tools"] = list(tools)
    return record
