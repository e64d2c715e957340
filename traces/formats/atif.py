"""`atif`: Harbor's Agent Trajectory Interchange Format (`schema_version: "ATIF-v1.x"`).

A `.json` file holds one trajectory (or an array of them), a `.jsonl` file one per line. The id is
`session_id`. Steps map to OpenAI messages, then `openai_messages.convert_messages` makes rows:

- the `system` step before the conversation starts is the system prompt; a later system step
  with only an `observation` carries the results of the agent step before it; any other later
  system step cannot be replayed (one system prompt per trajectory, docs/requests.md) and is an error;
- a `user` step is a user message (its `observation`, if any, answers the agent step before it);
- an `agent` step is an assistant message: `message` → content, `reasoning_content` kept,
  `tool_calls[{tool_call_id, function_name, arguments}]` → OpenAI tool calls (missing ids become
  `call_<turn>_<k>`); its `observation.results[{source_call_id, content}]` become the tool row
  that follows it (a result without `source_call_id` answers the call at its position);
- an agent step without tool calls but with an observation is a text action (mini-swe-agent
  style): a single ```bash block becomes a `bash` tool call as in the `mini-swe-agent` format;
  without one, the observation is fed back as a user message.
- Delays come from the step timestamps (ISO 8601): a client row's `delay_seconds` is the time
  from the agent step it answers to the step that follows it (the step carrying the observation
  or the user's message). Producers stamp steps once, so for an observation held inside its agent
  step this span also holds the next model call: it is an upper bound of the tool time. Spans that
  run backwards are clamped to 0.
- ATIF records no tool definitions. `extra.tools` (root or `agent.extra`) is used when present;
  otherwise `bash` gets mini-swe-agent's `BASH_TOOL` and other tools a minimal definition derived
  from their argument names, so servers still parse tool calls (docs/requests.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ..errors import ErrorSink, TraceFormatError
from ..model import Trajectory
from .mini_swe_agent import BASH_TOOL, bash_call, text_actions
from .openai_messages import iter_records, messages_trajectory, text_content

SCHEMA_VERSION = re.compile(r"^ATIF-v1\.\d+$")
SOURCES = ("system", "user", "agent")


class _StepError(Exception):
    def __init__(self, where: str, rule: str) -> None:
        super().__init__(rule)
        self.where = where
        self.rule = rule


def _timestamp(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        ts = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        ts = None
    if ts is None:
        raise _StepError(where, f"timestamp must be an ISO 8601 string like 2025-10-11T10:30:00Z, got {value!r}")
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _span(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round(max(0.0, (end - start).total_seconds()), 3)


def _calls(step: dict[str, Any], at: str) -> list[dict[str, Any]]:
    raw = step.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _StepError(f"{at}.tool_calls", "tool_calls must be a list of {tool_call_id, function_name, arguments}")
    calls = []
    for k, call in enumerate(raw):
        if not isinstance(call, dict) or not isinstance(call.get("function_name"), str):
            raise _StepError(f"{at}.tool_calls[{k}]", "each tool call needs a string function_name")
        args = call.get("arguments", {})
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append(
            {
                "id": call.get("tool_call_id"),
                "type": "function",
                "function": {"name": call["function_name"], "arguments": text},
            }
        )
    return calls


def _results(step: dict[str, Any], at: str) -> list[tuple[Any, str]]:
    obs = step.get("observation")
    if obs is None:
        return []
    results = obs.get("results") if isinstance(obs, dict) else None
    if not isinstance(results, list):
        raise _StepError(f"{at}.observation", "observation must be {results: [{source_call_id, content}]}")
    out = []
    for k, res in enumerate(results):
        if not isinstance(res, dict):
            raise _StepError(
                f"{at}.observation.results[{k}]", "each result must be an object {source_call_id, content}"
            )
        try:
            content = text_content(res.get("content"))
        except ValueError as exc:
            raise _StepError(f"{at}.observation.results[{k}]", str(exc)) from None
        out.append((res.get("source_call_id"), content or ""))
    return out


def _derived_tools(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    props: dict[str, set[str]] = {}
    for call in calls:
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"]) if fn["arguments"] else {}
        except ValueError:
            args = {}
        props.setdefault(fn["name"], set()).update(args if isinstance(args, dict) else ())
    tools = []
    for name in sorted(props):
        if name == "bash":
            tools.append(BASH_TOOL)
        else:
            params = {"type": "object", "properties": {k: {} for k in sorted(props[name])}}
            tools.append({"type": "function", "function": {"name": name, "description": "", "parameters": params}})
    return tools


def to_messages(obj: dict[str, Any], base: str) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """(OpenAI messages, the source place of each, every tool call) of one ATIF trajectory."""
    steps = obj.get("steps")
    at_steps = f"{base}.steps" if base else "steps"
    if not isinstance(steps, list) or not steps:
        raise _StepError(at_steps, "steps must be a non-empty list")
    places = [f"{at_steps}[{i}]" for i in range(len(steps))]
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise _StepError(places[i], f"each step must be an object, got {type(step).__name__}")
        if step.get("source") not in SOURCES:
            raise _StepError(f"{places[i]}.source", f"source must be system, user or agent; got {step.get('source')!r}")
    stamps = [_timestamp(s.get("timestamp"), f"{places[i]}.timestamp") for i, s in enumerate(steps)]
    messages: list[dict[str, Any]] = []
    wheres: list[str] = []
    all_calls: list[dict[str, Any]] = []
    agent: int | None = None  # the latest agent step, whose observation may still come
    answered = False  # whether that agent step's wait was already given to an observation

    def add(msg: dict[str, Any], where: str) -> None:
        messages.append(msg)
        wheres.append(where)

    def observe(results: list[tuple[Any, str]], calls: list[dict[str, Any]], where: str, delay: float | None) -> None:
        ids = {c["id"] for c in calls if c["id"]}
        if not calls:
            joined = "\n\n".join(content for _, content in results)
            add({"role": "user", "content": joined, "delay_seconds": delay}, where)
            return
        for k, (call_id, content) in enumerate(results):
            if call_id is not None and call_id not in ids:
                raise _StepError(
                    f"{where}.results[{k}]",
                    f"source_call_id {call_id!r} matches no tool call of the agent step it answers",
                )
            add(
                {"role": "tool", "tool_call_id": call_id, "content": content, "delay_seconds": delay},
                f"{where}.results[{k}]",
            )

    last_calls: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        source, at = step["source"], places[i]
        try:
            text = text_content(step.get("message"))
        except ValueError as exc:
            raise _StepError(f"{at}.message", str(exc)) from None
        results = _results(step, at)
        since_agent = _span(stamps[agent], stamps[i]) if agent is not None and not answered else None
        if source == "system" and not results:
            add({"role": "system", "content": text or ""}, at)  # the converter rejects a late one
            continue
        if source in ("system", "user") and results:
            if agent is None:
                raise _StepError(f"{at}.observation", "an observation must follow an agent step")
            observe(results, last_calls, f"{at}.observation", since_agent)
            answered = True
            since_agent = None
        if source == "user":
            if text or not results:
                add({"role": "user", "content": text, "delay_seconds": since_agent}, at)
            answered = True
            continue
        if source == "system":
            continue
        calls = _calls(step, at)
        msg: dict[str, Any] = {"role": "assistant", "content": text if text is not None else ""}
        if isinstance(step.get("reasoning_content"), str):
            msg["reasoning_content"] = step["reasoning_content"]
        if not calls and results:
            commands, rest = text_actions({}, text)
            if len(commands) == 1:
                calls = [{**bash_call(commands[0]), "id": None}]
                msg["content"] = rest or ""
        if calls:
            msg["tool_calls"] = calls
            all_calls.extend(calls)
        add(msg, at)
        agent, answered, last_calls = i, False, calls
        if results:
            nxt = stamps[i + 1] if i + 1 < len(steps) else None
            observe(results, calls, f"{at}.observation", _span(stamps[i], nxt))
            answered = True
    return messages, wheres, all_calls


def _tools(obj: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    agent = obj.get("agent")
    for holder in (obj.get("extra"), agent.get("extra") if isinstance(agent, dict) else None):
        if isinstance(holder, dict) and isinstance(holder.get("tools"), list):
            tools: list[dict[str, Any]] = holder["tools"]
            return tools
    return _derived_tools(calls) if calls else None


def _at(base: str, key: str) -> str:
    """Where `key` of the record at `base` is, in an error's location."""
    return f"{base}.{key}" if base else key


def read(path: str, sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield each ATIF trajectory of the file; report each violation to `sink`."""
    any_record = False
    for line, base, obj in iter_records(path, sink):
        any_record = True
        cid = obj.get("session_id")
        if not isinstance(cid, str) or not cid:
            sink(
                TraceFormatError(
                    path, line, f"session_id must be a non-empty string, got {cid!r}", where=_at(base, "session_id")
                )
            )
            continue
        version = obj.get("schema_version")
        if not isinstance(version, str) or not SCHEMA_VERSION.match(version):
            sink(
                TraceFormatError(
                    path,
                    line,
                    f"unknown schema_version {version!r}; this reader knows ATIF-v1.x",
                    conversation=cid,
                    where=_at(base, "schema_version"),
                )
            )
            continue
        try:
            messages, wheres, calls = to_messages(obj, base)
        except _StepError as exc:
            sink(TraceFormatError(path, line, exc.rule, conversation=cid, where=exc.where))
            continue
        for msg in messages:
            if msg.get("delay_seconds") is None:
                msg.pop("delay_seconds", None)
        traj = messages_trajectory(
            messages,
            path=path,
            line=line,
            base=base,
            conversation=cid,
            sink=sink,
            tools=_tools(obj, calls),
            wheres=wheres,
        )
        if traj is not None:
            yield traj
    if not any_record:
        sink(TraceFormatError(path, None, "the file holds no trajectories"))
