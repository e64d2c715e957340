"""The exact JSON body of a chat-completions request for one turn (docs/requests.md, docs/metrics.md).

Shared by `traces show` and the replay client so that what a user inspects is what is sent.
Dataset-only fields (delays, intent codes, ids) never reach this function.
"""

from __future__ import annotations

from typing import Any

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
