"""The history marker: one whitespace character inserted into every replayed assistant message.

Why: during a run the server's KV cache holds what the model generated live, while the next turn's
history holds the *recorded* answer. A system that happens to regenerate the recording would reuse
its own tokens and look faster. One inserted space makes the cached match stop inside the assistant
turn, whichever system produced the traces (docs/history-marker.md).

Where: chat templates strip leading and trailing whitespace of `content` and `reasoning_content`
(Qwen3.6's does), so a leading space is erased before tokenisation. The candidate positions, in
order, are:

1. `reasoning_content`, then `content`: before the first whitespace that sits between two
   non-whitespace characters (the run of whitespace grows by one space);
2. a leading space on the first non-empty of `reasoning_content`, `content`, or `content: " "`
   when the message has no text.

Never inside a tool call's `arguments`: vLLM and SGLang parse the arguments string into an object
before the template sees it, which erases any whitespace put there (it changed no engine's prompt
in 18 of 18 cases measured); the client-side check parses them the same way
(`traces.tokenizers.chat.server_message`), so it could not tell.

Without a chat template the first candidate is taken. A build with a tokenizer takes the first
candidate whose rendered prompt differs from the unmarked one (`choose` with a `differs` check);
a message no candidate changes gets no marker and is counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import TraceError

#: The one character the marker inserts.
MARK = " "

_TEXT_FIELDS = ("reasoning_content", "content")
_INNER_SPACE = re.compile(r"\S(\s)(?=\s*\S)")


@dataclass(frozen=True)
class Marker:
    """Insert `MARK` at character `at` of `field` ("reasoning_content" or "content")."""

    field: str
    at: int


def candidates(message: dict[str, Any]) -> list[Marker]:
    """Every place the marker may go in an assistant message, in the order of the rule."""
    out: list[Marker] = []
    for field in _TEXT_FIELDS:
        text = message.get(field)
        if isinstance(text, str) and (m := _INNER_SPACE.search(text)):
            out.append(Marker(field, m.start(1)))
    lead = next((f for f in _TEXT_FIELDS if isinstance(message.get(f), str) and message[f]), "content")
    out.append(Marker(lead, 0))
    return out


def apply(message: dict[str, Any], marker: Marker) -> dict[str, Any]:
    """A copy of `message` with the marker inserted (the input is not changed)."""
    if marker.field not in _TEXT_FIELDS:
        raise TraceError(
            f"history marker in {marker.field!r}: only reasoning_content or content carry it (shards built "
            "by an older trajbench put it in tool-call arguments, where engines erase it); rebuild the shards "
            "(docs/history-marker.md)"
        )
    out = dict(message)
    text = out.get(marker.field)
    if not isinstance(text, str):
        # `content: " "` on a message without text: the reference's field order puts content
        # right after role, so it is inserted there rather than appended.
        return {"role": out["role"], marker.field: MARK, **{k: v for k, v in out.items() if k != "role"}}
    out[marker.field] = text[: marker.at] + MARK + text[marker.at :]
    return out


def choose(message: dict[str, Any], differs: Callable[[dict[str, Any]], bool] | None = None) -> Marker | None:
    """The marker of one message: the first candidate, or with `differs` (does this marked copy
    render differently from the original?) the first candidate that survives the template."""
    for marker in candidates(message):
        if differs is None or differs(apply(message, marker)):
            return marker
    return None
