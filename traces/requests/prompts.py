"""The request messages of each client turn, rebuilt from the recording (docs/requests.md).

Shards store each turn's *new* flat rows (its delta); the full prompt of turn t is the salted
system message followed by the wire form of deltas 1..t. `PromptBuilder` is the one place that
rebuilds it, so replay, analysis, `traces show` and the simulator's oracle agree byte for byte.

Wire form: servers and chat templates see the bytes, not just the values (a template's `tojson`
keeps key order), so messages are built with the reference client's field order (role, content,
name, tool_calls, tool_call_id, reasoning_content) and every nested object (tool calls, tools and
their JSON schemas) keeps the dataset's own key order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..canonical import MessagesHasher
from ..errors import TraceError
from .marker import Marker, apply
from .salt import Salt

#: Fields of a user or assistant message, in the order the reference's message type emits them.
MESSAGE_FIELDS = ("content", "name", "tool_calls", "reasoning_content")


def wire_messages(flat: dict[str, Any], marker: Marker | None = None) -> list[dict[str, Any]]:
    """The OpenAI chat messages of one flat row; `marker` (assistant rows) is the history marker."""
    role = flat["role"]
    if role == "tool":
        return [
            {"role": "tool", "content": r["content"], "tool_call_id": r["tool_call_id"]} for r in flat["tool_results"]
        ]
    msg: dict[str, Any] = {"role": role}
    for key in MESSAGE_FIELDS:
        value = flat.get(key)
        if value is not None:
            msg[key] = value
    if marker is not None and role == "assistant":
        msg = apply(msg, marker)
    return [msg]


class PromptBuilder:
    """Accumulates one trajectory instance's prompt, turn by turn, with its running hash."""

    def __init__(self, system: str | None, salt: Salt, *, source_id: str) -> None:
        if salt.mode != "none" and not system:
            raise TraceError(
                f"conversation {source_id}: has no system prompt, so it cannot be salted (docs/salting.md); "
                "add a system prompt or build with --salt none"
            )
        self.messages: list[dict[str, Any]] = []
        self._hasher = MessagesHasher()
        if system:
            self._append([{"role": "system", "content": salt.apply(system)}])

    def _append(self, messages: list[dict[str, Any]]) -> None:
        self.messages.extend(messages)
        self._hasher.extend(messages)

    def add_delta(self, flat_rows: Iterable[dict[str, Any]], marker: Marker | None = None) -> list[dict[str, Any]]:
        """Append one turn's new rows (`marker` goes into its assistant row); returns the wire
        messages they added."""
        added: list[dict[str, Any]] = []
        for flat in flat_rows:
            added.extend(wire_messages(flat, marker))
        self._append(added)
        return added

    @property
    def chars(self) -> int:
        """Characters of the canonical JSON of the prompt so far."""
        return self._hasher.chars

    def sha256(self) -> str:
        """sha256 of the canonical JSON of the prompt so far (equals `messages_sha256`)."""
        return self._hasher.hexdigest()
