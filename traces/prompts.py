"""The request messages of each client turn, rebuilt from the recording (SPEC §3–§5).

Shards store each turn's *new* flat rows (its delta); the full prompt of turn t is the salted
system message followed by the wire form of deltas 1..t. `PromptBuilder` is the one place that
rebuilds it, so replay, analysis, `traces show` and the simulator's oracle agree byte for byte.
"""

from __future__ import annotations

from typing import Any, Iterable

from .canonical import MessagesHasher
from .errors import TraceError
from .salt import Salt

#: The whitespace inserted before every replayed assistant message (SPEC §5).
HISTORY_MARKER = " "


def wire_messages(flat: dict[str, Any], *, history_marker: bool) -> list[dict[str, Any]]:
    """The OpenAI chat messages of one flat row (SPEC §3 mapping, §5 marker on assistant rows)."""
    role = flat["role"]
    if role == "tool":
        return [
            {"role": "tool", "tool_call_id": r["tool_call_id"], "content": r["content"]}
            for r in flat["tool_results"]
        ]
    msg: dict[str, Any] = {"role": role}
    for key in ("content", "name", "tool_calls", "reasoning_content"):
        value = flat.get(key)
        if value is not None:
            msg[key] = value
    if role == "assistant" and history_marker:
        if msg.get("reasoning_content"):
            msg["reasoning_content"] = HISTORY_MARKER + msg["reasoning_content"]
        elif msg.get("content"):
            msg["content"] = HISTORY_MARKER + msg["content"]
        else:
            msg["content"] = HISTORY_MARKER
    return [msg]


class PromptBuilder:
    """Accumulates one trajectory instance's prompt, turn by turn, with its running hash."""

    def __init__(self, system: str | None, salt: Salt, *, history_marker: bool, source_id: str) -> None:
        if salt.mode != "none" and not system:
            raise TraceError(
                f"conversation {source_id}: has no system prompt, so it cannot be salted (SPEC §4); "
                "add a system prompt or build with --salt none"
            )
        self.history_marker = history_marker
        self.messages: list[dict[str, Any]] = []
        self._hasher = MessagesHasher()
        if system:
            self._append([{"role": "system", "content": salt.apply(system)}])

    def _append(self, messages: list[dict[str, Any]]) -> None:
        self.messages.extend(messages)
        self._hasher.extend(messages)

    def add_delta(self, flat_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append one turn's new rows; returns the wire messages they added."""
        added: list[dict[str, Any]] = []
        for flat in flat_rows:
            added.extend(wire_messages(flat, history_marker=self.history_marker))
        self._append(added)
        return added

    @property
    def chars(self) -> int:
        """Characters of the canonical JSON of the prompt so far."""
        return self._hasher.chars

    def sha256(self) -> str:
        """sha256 of the canonical JSON of the prompt so far (equals `messages_sha256`)."""
        return self._hasher.hexdigest()
