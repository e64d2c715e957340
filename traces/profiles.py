"""Model profiles: served name, sampling parameters, thresholds (docs/requests.md, docs/accuracy.md).

One data file (`data/profiles.json`) so that replay's request parameters, the OSL gate and the
compliance check all read the same numbers; a submission may not change the sampling values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .errors import TraceError


@dataclass(frozen=True)
class Thresholds:
    inline: float | None
    osl_min: float | None
    osl_max: float | None
    swebench: float | None


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    served_model_name: str
    tokenizer: str
    sampling: dict[str, Any]
    max_new_tokens: int
    chat_template_kwargs: dict[str, Any]
    thresholds: Thresholds
    swebench_template: str

    def request_params(self) -> dict[str, Any]:
        """The body fields the profile fixes: sampling, output cap, chat-template kwargs."""
        params: dict[str, Any] = {**self.sampling, "max_completion_tokens": self.max_new_tokens}
        if self.chat_template_kwargs:
            params["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return params


@cache
def profiles() -> dict[str, Profile]:
    raw = json.loads(resources.files("traces").joinpath("data/profiles.json").read_text("utf-8"))
    return {
        name: Profile(name=name, **{**spec, "thresholds": Thresholds(**spec["thresholds"])})
        for name, spec in sorted(raw.items())
    }


def get_profile(name: str) -> Profile:
    try:
        return profiles()[name]
    except KeyError:
        raise TraceError(f"unknown profile {name!r}; choose one of {', '.join(profiles())}") from None
