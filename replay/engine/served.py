"""Which model name to send: the one given, else the profile's, else the one the endpoint serves.

Engines route by the request's `model` and refuse any other name (vLLM answers HTTP 404 "The model
`X` does not exist."), so a run with the profile's name (`moonshotai/Kimi-K3`) against a server
that serves the model under another name used to fail every turn. `choose_model` settles the name
from the endpoint's own list (`GET /v1/models`) instead of guessing: a name given with `--model` is
sent as given (the engine's answer decides); the profile's name is kept when the endpoint lists
it, or lists nothing; when it is not listed and the endpoint serves exactly one model, that one is
used and the choice says so; with several, none is picked and the error lists them
(docs/engines.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import ReplayError

#: How the name was settled: `--model`, the profile's served name, or the endpoint's only model.
ModelSource = Literal["option", "profile", "served"]
_SHOWN = 10  # models listed in an error before "…"


class ModelNotServed(ReplayError):
    """The profile's model name is not served and the endpoint serves several: none is guessed."""


@dataclass(frozen=True)
class ModelChoice:
    """The model name requests carry, and how it was settled."""

    name: str
    source: ModelSource
    profile_name: str  # the profile's served name, kept to say why another was used


def listed(models: Sequence[str]) -> str:
    """The served names as an error shows them (the first `_SHOWN`)."""
    return ", ".join(models[:_SHOWN]) + (" …" if len(models) > _SHOWN else "")


def choose_model(
    asked: str | None, profile_name: str, served: Sequence[str] | None, *, endpoint: str, strict: bool = True
) -> ModelChoice:
    """The name to send. `served` is the endpoint's `GET /v1/models` ids (None: it did not answer).
    With several served models and none the profile's, `strict` raises `ModelNotServed` listing
    them; otherwise (a run started with --skip-preflight) the profile's name is kept and the
    engine's answer to each turn says what is wrong."""
    if asked is not None:
        return ModelChoice(asked, "option", profile_name)
    if not served or profile_name in served:
        return ModelChoice(profile_name, "profile", profile_name)
    if len(served) == 1:
        return ModelChoice(served[0], "served", profile_name)
    if not strict:
        return ModelChoice(profile_name, "profile", profile_name)
    raise ModelNotServed(
        f"{endpoint} does not serve the profile's model name {profile_name!r}; it serves {len(served)} models "
        f"({listed(served)}): pass --model NAME with the one to measure"
    )
