"""`mini-swe-agent`: trajectory JSON of mini-swe-agent (`trajectory_format: "mini-swe-agent-1.x"`).

This is the form DeepSWE trajectories come in from DataCurve's harness: `{"info": {...},
"messages": [...], "trajectory_format": "mini-swe-agent-1" | "mini-swe-agent-1.1"}` with OpenAI
messages (v2 adds an `extra` dict to each). A `.json` file holds one trajectory (or an array of
them); a `.jsonl` file one per line. The id is `instance_id` (top level, then `info`), else the
file name without `.traj.json`.

Mapping to official rows (then `openai_messages.convert_messages` does the rest):

- Tool-calling runs (v2 default) already carry `tool_calls` and `role: "tool"` results.
- Text-action runs (v1, and v2 `*_textbased`) write the command as a code block in the assistant
  text and get the output back as the next `user` message. We convert that action into a `bash`
  tool call `{"command": ...}` with id `call_<turn>_<k>`, remove the code block from the text
  (the remaining THOUGHT stays as content), and turn the following user "observation" message(s)
  into the tool row that answers it. The action is `extra.actions` when v2 recorded it, else the
  single ```bash / ```mswea_bash_command block of the text; a message with zero or several
  blocks was not executed by mini-swe-agent (it answered with a format error), so it stays text.
- Delays: when both messages carry a timestamp (`extra.timestamp`, `timestamp`, `created_at`,
  seconds since the epoch), an observation's `delay_seconds` is its time minus the answering
  assistant message's time (the tool's run time), rounded to milliseconds.
- `role: "exit"` messages (v2's end-of-run record) are skipped; the trajectory records no tool
  list, so every turn is given mini-swe-agent's one `bash` tool (`BASH_TOOL`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ..errors import ErrorSink, TraceFormatError
from ..model import Trajectory
from .openai_messages import derived_id, iter_records, messages_trajectory, text_content

#: mini-swe-agent's bash tool, as its tool-calling models declare it.
BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
            "required": ["command"],
        },
    },
}

FORMAT_VERSION = re.compile(r"^mini-swe-agent-1(\.\d+)*$")
#: v1 used ```bash, v2 ```mswea_bash_command (mini-swe-agent's default action regexes).
ACTION_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)


def text_actions(message: dict[str, Any], content: str | None) -> tuple[list[str], str | None]:
    """(commands, content without the code block) of a text-action assistant message."""
    extra = message.get("extra")
    recorded = extra.get("actions") if isinstance(extra, dict) else None
    blocks = ACTION_BLOCK.findall(content or "")
    if (
        isinstance(recorded, list)
        and recorded
        and all(isinstance(a, dict) and isinstance(a.get("command"), str) for a in recorded)
    ):
        commands = [a["command"] for a in recorded]
    elif len(blocks) == 1:
        commands = [blocks[0].strip()]
    else:
        return [], content
    rest = ACTION_BLOCK.sub("", content or "").strip() if blocks else (content or "").strip()
    return commands, rest or None


def bash_call(command: str) -> dict[str, Any]:
    """A `bash` tool call without id (the converter assigns `call_<turn>_<k>`)."""
    return {
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command}, ensure_ascii=False)},
    }


def _timestamp(message: dict[str, Any]) -> float | None:
    extra = message.get("extra")
    for value in (
        extra.get("timestamp") if isinstance(extra, dict) else None,
        message.get("timestamp"),
        message.get("created_at"),
    ):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def to_openai(messages: list[Any]) -> list[Any]:
    """mini-swe-agent messages → plain OpenAI messages with text actions made into tool calls."""
    out: list[Any] = []
    pending = 0  # observations still owed to the last converted text action
    asked_at: float | None = None
    for msg in messages:
        if not isinstance(msg, dict):
            out.append(msg)  # reported by the converter with its index
            continue
        role = msg.get("role")
        if role == "exit":
            continue
        clean = {k: v for k, v in msg.items() if k != "extra"}
        if role == "assistant":
            pending = 0
            asked_at = _timestamp(msg)
            if not msg.get("tool_calls"):
                try:
                    content = text_content(msg.get("content"))
                except ValueError:
                    content = None  # the converter reports it
                commands, rest = text_actions(msg, content)
                if commands:
                    clean["content"] = rest
                    clean["tool_calls"] = [bash_call(c) for c in commands]
                    pending = len(commands)
        elif role in ("user", "tool"):
            obs_at = _timestamp(msg)
            if role == "user" and pending:
                clean["role"] = "tool"
                clean.pop("tool_call_id", None)
                pending -= 1
            if clean["role"] == "tool" and asked_at is not None and obs_at is not None:
                clean["delay_seconds"] = round(max(0.0, obs_at - asked_at), 3)
        out.append(clean)
    return out


def trajectory_id(obj: dict[str, Any], path: str, line: int | None, base: str) -> Any:
    info = obj.get("info")
    for value in (obj.get("instance_id"), info.get("instance_id") if isinstance(info, dict) else None):
        if value is not None:
            return value
    return derived_id(path, line, base)


def read(path: str, sink: ErrorSink) -> Iterator[Trajectory]:
    """Yield each trajectory of a mini-swe-agent `.traj.json` (or JSONL of them)."""
    any_record = False
    for line, base, obj in iter_records(path, sink):
        any_record = True
        where = f"{base}.trajectory_format" if base else "trajectory_format"
        cid = trajectory_id(obj, path, line, base)
        if not isinstance(cid, str):
            sink(TraceFormatError(path, line, f"instance_id must be a string, got {cid!r}", where=base or None))
            continue
        version = obj.get("trajectory_format")
        if version is not None and (not isinstance(version, str) or not FORMAT_VERSION.match(version)):
            sink(
                TraceFormatError(
                    path,
                    line,
                    f"unknown trajectory_format {version!r}; this reader knows mini-swe-agent-1.x",
                    conversation=cid,
                    where=where,
                )
            )
            continue
        messages = obj.get("messages")
        if not isinstance(messages, list):
            sink(
                TraceFormatError(
                    path,
                    line,
                    "missing `messages`: a mini-swe-agent trajectory is {info, messages, trajectory_format}",
                    conversation=cid,
                    where=base or None,
                )
            )
            continue
        if any(isinstance(m, dict) and m.get("object") == "response" for m in messages):
            sink(
                TraceFormatError(
                    path,
                    line,
                    "Responses-API trajectories (object: response) are not supported; record the run with a chat-completions model class",
                    conversation=cid,
                    where=base or None,
                )
            )
            continue
        traj = messages_trajectory(
            to_openai(messages), path=path, line=line, base=base, conversation=cid, sink=sink, tools=[BASH_TOOL]
        )
        if traj is not None:
            yield traj
    if not any_record:
        sink(TraceFormatError(path, None, "the file holds no trajectories"))
