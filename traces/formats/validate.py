"""docs/dataset-format.md validation: flat row dicts of one conversation → a validated `Trajectory`.

Every input format converts its records into flat rows (the official interchange form) and calls
`build_trajectory`, so all formats obey the same rules and report violations the same way.
Errors are collected, not raised one by one, so `traces validate` can list them all.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import ErrorSink, TraceFormatError
from ..model import GENERATION_PARAMS, ROLES, Row, Trajectory

KNOWN_FIELDS = frozenset(
    {
        "conversation_id",
        "turn",
        "role",
        "content",
        "reasoning_content",
        "tool_calls",
        "tool_results",
        "name",
        "system",
        "tools",
        "delay_seconds",
        "intent_codes",
        *GENERATION_PARAMS,
    }
)

#: The longest recorded wait a row may carry (24 h). Replay waits it out, so an absurd value (a
#: timestamp in milliseconds, 1e300) would stall a run instead of failing the build.
MAX_DELAY_SECONDS = 86_400.0

#: What may follow each role (docs/dataset-format.md); `None` is the start of a conversation.
NEXT_ROLES: dict[str | None, tuple[str, ...]] = {
    None: ("user",),
    "user": ("assistant",),
    "assistant": ("tool", "user"),
    "tool": ("assistant", "user"),
}


@dataclass(frozen=True)
class FlatRow:
    """A raw row and where it came from (a line number, or a JSON path for document formats;
    `path` when the rows of one conversation span files, else the conversation's file)."""

    data: dict[str, Any]
    line: int | None = None
    where: str | None = None
    path: str | None = None


def is_printable_ascii(text: str) -> bool:
    # ASCII's printable characters are exactly 32..126, so two C loops replace one Python loop
    return bool(text) and text.isascii() and text.isprintable()


class _Checker:
    def __init__(self, path: str, conversation: str, sink: ErrorSink) -> None:
        self.path = path
        self.conversation = conversation
        self.sink = sink
        self._failed = False

    def error(self, row: FlatRow, turn: int | None, rule: str) -> None:
        self._failed = True
        self.sink(
            TraceFormatError(
                row.path or self.path, row.line, rule, conversation=self.conversation, turn=turn, where=row.where
            )
        )

    def failed(self) -> bool:
        """Whether a violation was reported. A method, not an attribute: a type checker keeps an
        attribute it has seen False narrowed across the `error` calls that set it."""
        return self._failed


def _check_tool_calls(chk: _Checker, fr: FlatRow, turn: int, value: Any) -> tuple[dict[str, Any], ...] | None:
    if not isinstance(value, list) or not value:
        chk.error(fr, turn, "tool_calls must be a non-empty list of {id, type, function}")
        return None
    calls = []
    for k, call in enumerate(value):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            chk.error(fr, turn, f"tool_calls[{k}] must be {{id, type: 'function', function: {{name, arguments}}}}")
            return None
        if not isinstance(call.get("id"), str) or not call["id"]:
            chk.error(fr, turn, f"tool_calls[{k}].id must be a non-empty string")
            return None
        if call.get("type", "function") != "function":
            chk.error(fr, turn, f"tool_calls[{k}].type must be 'function', not {call.get('type')!r}")
            return None
        args = fn.get("arguments", "")
        if isinstance(args, dict):  # the official form is a string: serialised, key order kept
            calls.append({**call, "function": {**fn, "arguments": json.dumps(args, ensure_ascii=False)}})
        elif isinstance(args, str):
            calls.append(call)  # kept as recorded: what is sent follows the source byte for byte
        else:
            chk.error(fr, turn, f"tool_calls[{k}].function.arguments must be a JSON string or an object")
            return None
    return tuple(calls)


def _check_tool_results(chk: _Checker, fr: FlatRow, turn: int, value: Any) -> tuple[dict[str, Any], ...] | None:
    if not isinstance(value, list) or not value:
        chk.error(fr, turn, "a tool row needs tool_results: a non-empty list of {tool_call_id, content}")
        return None
    for k, res in enumerate(value):
        if not isinstance(res, dict) or not isinstance(res.get("tool_call_id"), str):
            chk.error(fr, turn, f"tool_results[{k}] must be an object with a string tool_call_id")
            return None
        if not isinstance(res.get("content"), str):
            chk.error(fr, turn, f"tool_results[{k}].content must be a string")
            return None
    return tuple(dict(r) for r in value)


def _check_tools(chk: _Checker, fr: FlatRow, turn: int, value: Any) -> tuple[dict[str, Any], ...] | None:
    if not isinstance(value, list):
        chk.error(fr, turn, "tools must be a list of OpenAI function tools")
        return None
    for k, tool in enumerate(value):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            chk.error(fr, turn, f"tools[{k}] must be {{type: 'function', function: {{name, parameters}}}}")
            return None
    return tuple(value)


def _opt_str(chk: _Checker, fr: FlatRow, turn: int, data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    chk.error(fr, turn, f"{key} must be a string, not {type(value).__name__}")
    return None


def _check_row(chk: _Checker, fr: FlatRow) -> Row | None:
    d = fr.data
    turn = d.get("turn")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        chk.error(fr, None, f"turn must be an integer >= 1, got {turn!r}")
        return None
    role = d.get("role")
    if role not in ROLES:
        chk.error(fr, turn, f"role must be one of user, assistant, tool; got {role!r}")
        return None
    content = _opt_str(chk, fr, turn, d, "content")
    reasoning = _opt_str(chk, fr, turn, d, "reasoning_content")
    name = _opt_str(chk, fr, turn, d, "name")
    system = _opt_str(chk, fr, turn, d, "system")
    tool_calls = tool_results = tools = None
    if d.get("tool_calls") is not None:
        if role != "assistant":
            chk.error(fr, turn, f"tool_calls are only allowed on assistant rows, not on a {role} row")
        else:
            tool_calls = _check_tool_calls(chk, fr, turn, d["tool_calls"])
    if role == "user" and not content:
        chk.error(fr, turn, "a user row needs a non-empty string content")
    if role == "assistant" and content is None and d.get("tool_calls") is None:
        chk.error(fr, turn, "an assistant row needs content unless it has tool_calls")
    if role == "tool":
        tool_results = _check_tool_results(chk, fr, turn, d.get("tool_results"))
    if d.get("tools") is not None:
        tools = _check_tools(chk, fr, turn, d["tools"])
    delay = d.get("delay_seconds")
    if delay is not None:
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not math.isfinite(delay) or delay < 0:
            chk.error(fr, turn, f"delay_seconds must be a number >= 0, got {delay!r}")
            delay = None
        elif delay > MAX_DELAY_SECONDS:
            chk.error(
                fr,
                turn,
                f"delay_seconds must be at most {MAX_DELAY_SECONDS:,.0f} (24 h), got {delay!r}; fix the recorded wait (a timestamp difference in milliseconds?)",
            )
            delay = None
        else:
            delay = float(delay)  # kept on any row as recorded; only client rows' delays are waited
    intents = d.get("intent_codes")
    if intents is not None:
        if not isinstance(intents, list) or not all(isinstance(c, str) for c in intents):
            chk.error(fr, turn, "intent_codes must be a list of strings like ['I042']")
            intents = None
        else:
            intents = tuple(intents)
    params = {k: d[k] for k in GENERATION_PARAMS if k in d and d[k] is not None}
    extra = {k: v for k, v in d.items() if k not in KNOWN_FIELDS and k != "_type"}
    return Row(
        turn=turn,
        role=role,
        content=content,
        reasoning_content=reasoning,
        tool_calls=tool_calls,
        tool_results=tool_results,
        name=name,
        system=system,
        tools=tools,
        delay_seconds=delay,
        intent_codes=intents,
        params=MappingProxyType(params),
        extra=MappingProxyType(extra),
        line=fr.line,
    )


def build_trajectory(path: str, conversation_id: str, flat_rows: list[FlatRow], sink: ErrorSink) -> Trajectory | None:
    """Validate one conversation's rows; report each violation to `sink`; None if any failed."""
    chk = _Checker(path, conversation_id, sink)
    first = flat_rows[0] if flat_rows else FlatRow({})
    if not isinstance(conversation_id, str) or not is_printable_ascii(conversation_id):
        chk.error(first, None, "conversation_id must be a non-empty printable ASCII string (characters 32-126)")
        return None
    rows = [r for r in (_check_row(chk, fr) for fr in flat_rows) if r is not None]
    if chk.failed():
        return None
    by_turn = sorted(zip(rows, flat_rows, strict=True), key=lambda p: p[0].turn)
    for expected, (row, fr) in enumerate(by_turn, start=1):
        if row.turn != expected:
            rule = (
                f"turn {row.turn} appears twice"
                if row.turn < expected
                else f"turns must be exactly 1..N with no gaps; turn {expected} is missing"
            )
            chk.error(fr, row.turn, rule)
            return None
    prev: Row | None = None
    for row, fr in by_turn:
        allowed = NEXT_ROLES[prev.role if prev else None]
        if row.role not in allowed:
            after = f"after {_a(prev.role)} row" if prev else "as the first row"
            chk.error(fr, row.turn, f"{_a(row.role)} row cannot come {after} (allowed: {', '.join(allowed)})")
        elif row.role == "tool" and not (prev and prev.tool_calls):
            chk.error(fr, row.turn, "a tool row must follow an assistant row with tool_calls")
        elif row.role == "user" and prev is not None and prev.tool_calls:
            chk.error(
                fr,
                row.turn,
                "a user row cannot directly follow an assistant row with tool_calls; a tool row must answer them",
            )
        prev = row
    if chk.failed():
        return None
    return Trajectory(id=conversation_id, rows=tuple(r for r, _ in by_turn), source=path)


def _a(word: str) -> str:
    return ("an " if word == "assistant" else "a ") + word  # the roles are user, assistant, tool
