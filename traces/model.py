"""The Trajectory model every input format is read into (docs/terms.md, docs/dataset-format.md).

A trajectory is the ordered list of its rows in the official flat form. Rows keep the raw facts
of the recording (including unknown extra fields, so export loses nothing); derived views such as
the client turns or the effective tool list are methods, not stored state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

ROLES = ("user", "assistant", "tool")
CLIENT_ROLES = ("user", "tool")

#: Per-row generation parameters the official format allows (docs/dataset-format.md); kept, never sent as-is.
GENERATION_PARAMS = (
    "model",
    "max_new_tokens",
    "max_completion_tokens",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
    "n",
    "logit_bias",
    "user",
    "stream",
    "chat_template",
)

WORKFLOW_ID = re.compile(r"^sim_\d+$")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of an OpenAI content list
    joined as chat templates join them (with nothing between); "" for none. Any other part
    (an image, audio) raises ValueError naming it: trajbench replays text only."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for k, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise ValueError(f"content part {k} is {kind!r}; only text parts can be replayed")
        return "".join(texts)
    raise ValueError(f"content must be a string or a list of text parts, not {type(content).__name__}")


def domain_of(conversation_id: str) -> str:
    """`workflow` for Workato-style ids (`sim_NNN`), else `coding` (docs/accuracy.md's domain rule)."""
    return "workflow" if WORKFLOW_ID.match(conversation_id) else "coding"


@dataclass(frozen=True)
class Row:
    """One message of a recording, as one row of the official flat format."""

    turn: int
    role: str
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: tuple[dict[str, Any], ...] | None = None
    tool_results: tuple[dict[str, Any], ...] | None = None
    name: str | None = None
    system: str | None = None
    tools: tuple[dict[str, Any], ...] | None = None
    delay_seconds: float | None = None
    intent_codes: tuple[str, ...] | None = None
    params: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    line: int | None = field(default=None, compare=False)

    @property
    def is_client(self) -> bool:
        return self.role in CLIENT_ROLES


@dataclass(frozen=True)
class Trajectory:
    """One recorded agent task: its source id and rows in turn order (turns exactly 1..N)."""

    id: str
    rows: tuple[Row, ...]
    source: str = field(default="", compare=False)

    @property
    def domain(self) -> str:
        return domain_of(self.id)

    @property
    def system(self) -> str | None:
        """The first non-empty `system` in turn order, the prompt of every turn (docs/dataset-format.md)."""
        for row in self.rows:
            if row.system:
                return row.system
        return None

    def client_indices(self) -> list[int]:
        """Indices into `rows` of the client turns, each of which becomes one request."""
        return [i for i, r in enumerate(self.rows) if r.is_client]

    def effective_tools(self) -> list[tuple[dict[str, Any], ...] | None]:
        """The tools sent with each row's request: its own, else those of the conversation's
        first user row (the reference client's rule, docs/requests.md). A row that changes the
        tools does not carry them over to later rows that give none."""
        first = next((r.tools for r in self.rows if r.role == "user"), None)
        return [row.tools if row.tools is not None else first for row in self.rows]

    def answer_after(self, index: int) -> Row | None:
        """The recorded assistant row that answers client row `index` (its ground truth)."""
        nxt = index + 1
        if nxt < len(self.rows) and self.rows[nxt].role == "assistant":
            return self.rows[nxt]
        return None
