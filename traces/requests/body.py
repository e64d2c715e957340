"""The exact JSON body of a chat-completions request for one turn (docs/requests.md, docs/metrics.md).

Shared by `traces show` and the replay client so that what a user inspects is what is sent.
Dataset-only fields (delays, intent codes, ids) never reach this function.
"""

from __future__ import annotations

from operator import is_
from typing import Any

import orjson

from ..profiles import Profile


def request_body(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    profile: Profile,
    *,
    model: str | None = None,
    max_completion_tokens: int | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model or profile.served_model_name, "messages": messages}
    if tools is not None:  # an empty list too, as the reference sends it
        body["tools"] = tools
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    body.update(profile.request_params())
    if max_completion_tokens is not None:
        body["max_completion_tokens"] = max_completion_tokens
    return body


class BodyEncoder:
    """One instance's request bodies as JSON bytes, each message encoded once.

    A turn's prompt is the previous turn's messages and a few more, so encoding the whole body
    every turn encoded the history again and again: on the benchmark's prompts (tens of KB) that
    was the client's largest cost per turn after the kernel's. Each message is encoded when it
    first appears and its bytes are joined; the result is byte for byte `orjson.dumps` of
    `request_body(...)` (the key order is the body's, and a JSON string never holds an unescaped
    `"messages":[]`, so the one placeholder is exact). Messages are matched by identity: a prompt
    that does not extend the last one is encoded afresh.
    """

    def __init__(self, profile: Profile, *, model: str | None = None, max_completion_tokens: int | None = None) -> None:
        self.profile = profile
        self.model = model
        self.max_completion_tokens = max_completion_tokens
        self._messages: list[dict[str, Any]] = []
        self._encoded: list[bytes] = []
        self._frame: tuple[object, bytes, bytes] | None = None  # (tools, before, after the messages)

    def encode(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> bytes:
        known = self._messages
        if len(messages) < len(known) or not all(map(is_, messages, known)):
            known.clear()
            self._encoded.clear()
        for message in messages[len(known) :]:
            known.append(message)
            self._encoded.append(orjson.dumps(message))
        if self._frame is None or self._frame[0] is not tools:
            empty = orjson.dumps(
                request_body(
                    [], tools, self.profile, model=self.model, max_completion_tokens=self.max_completion_tokens
                )
            )
            before, after = empty.split(_EMPTY_MESSAGES, 1)
            self._frame = (tools, before + b'"messages":[', b"]" + after)
        return b"%s%s%s" % (self._frame[1], b",".join(self._encoded), self._frame[2])


_EMPTY_MESSAGES = b'"messages":[]'
