"""Model profiles: served name, sampling parameters, thresholds (docs/requests.md, docs/accuracy.md).

The built-ins are one data file (`data/profiles.json`) so that replay's request parameters, the
OSL gate and the compliance check all read the same numbers; a submission may not change the
sampling values. A maintainer preparing a new model adds a *user* profile without editing the
package (docs/maintainers.md): a YAML or JSON file of the same shape, loaded with `--profiles
FILE` or from the folder named by `TRAJBENCH_PROFILES`. User profiles are checked field by field
(`profilefile`), listed with where they came from, and never shadow a built-in name: only a
built-in can be official, so a user file must not be able to pass as one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..env import PROFILES_ENV
from ..errors import TraceError

#: Where a built-in profile comes from (`Profile.source`); a user profile's source is its file.
BUILT_IN = "built-in"
#: The output-consistency audit's limits (docs/audits.md) when a profile states none: the largest
#: share of answered turns that may be empty, end at their first token, or stop at the output cap
#: (`finish_reason: length`). A profile's `output_consistency` overrides any of them.
DEFAULT_OUTPUT_CONSISTENCY = {"empty": 0.01, "first_token": 0.01, "length": 0.05}
#: The reference client's defaults of a profile's client settings (`Profile.turn_timeout_s`, `max_idle_s`).
DEFAULT_TURN_TIMEOUT_S = 86_400.0
DEFAULT_MAX_IDLE_S = 4.0
#: Fields that set how the client waits, not what is sent or how a run is judged: outside the hash.
CLIENT_FIELDS = ("turn_timeout_s", "max_idle_s")


class ProfileError(TraceError):
    """A user profile file that cannot be used: each line names the file, the profile, the field,
    the rule it breaks and how to fix it."""


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
    #: how the thresholds were set (`trajbench profiles derive` records its rule here)
    derivation: dict[str, Any] | None = None
    #: the output-consistency audit's limits this profile states (docs/audits.md); None: the
    #: defaults (`DEFAULT_OUTPUT_CONSISTENCY`), which `output_limits` fills in for any key left out
    output_consistency: dict[str, float] | None = None
    #: the client's defaults for this model (docs/closed-loop.md), as the reference's official
    #: configuration of the model sets them: seconds a turn may take before it fails (a request
    #: cancelled), and seconds a kept-alive socket may idle before it is not reused. Absent from a
    #: file: the reference client's own defaults.
    turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S
    max_idle_s: float = DEFAULT_MAX_IDLE_S
    #: `built-in`, or the user file it was read from (never part of the content or its hash)
    source: str = field(default=BUILT_IN, compare=False)

    @property
    def built_in(self) -> bool:
        return self.source == BUILT_IN

    def request_params(self) -> dict[str, Any]:
        """The body fields the profile fixes: sampling, output cap, chat-template kwargs."""
        params: dict[str, Any] = {**self.sampling, "max_completion_tokens": self.max_new_tokens}
        if self.chat_template_kwargs:
            params["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return params

    def output_limits(self) -> dict[str, float]:
        """The output-consistency limits that judge this profile's runs: its own, else the defaults."""
        return {**DEFAULT_OUTPUT_CONSISTENCY, **(self.output_consistency or {})}

    def content(self) -> dict[str, Any]:
        """The profile as a file holds it (name included, source left out): what run.json records."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "served_model_name": self.served_model_name,
            "tokenizer": self.tokenizer,
            "sampling": dict(self.sampling),
            "max_new_tokens": self.max_new_tokens,
            "chat_template_kwargs": dict(self.chat_template_kwargs),
            "thresholds": {
                "inline": self.thresholds.inline,
                "osl_min": self.thresholds.osl_min,
                "osl_max": self.thresholds.osl_max,
                "swebench": self.thresholds.swebench,
            },
            "swebench_template": self.swebench_template,
            "turn_timeout_s": self.turn_timeout_s,
            "max_idle_s": self.max_idle_s,
        }
        if self.derivation is not None:
            out["derivation"] = self.derivation
        # only when stated, so a profile without it keeps the content (and hash) it always had
        if self.output_consistency is not None:
            out["output_consistency"] = dict(self.output_consistency)
        return out

    def content_hash(self) -> str:
        """sha256 of what a run is judged by, as canonical JSON: the same profile gives the same
        hash anywhere, and a reworded description or derivation note does not fail older runs; the
        client's waiting times (`CLIENT_FIELDS`) are not part of it: a run records its own."""
        judged = {k: v for k, v in self.content().items() if k not in ("description", "derivation", *CLIENT_FIELDS)}
        text = json.dumps(judged, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def profile_from(spec: Mapping[str, Any], *, source: str = BUILT_IN) -> Profile:
    """A profile from checked content (`Profile.content()`, or a file's entry with its name)."""
    fields_: dict[str, Any] = {k: float(v) if k in CLIENT_FIELDS else v for k, v in spec.items() if k != "thresholds"}
    return Profile(**fields_, thresholds=Thresholds(**spec["thresholds"]), source=source)


@cache
def builtin_profiles() -> dict[str, Profile]:
    raw = json.loads(resources.files("traces").joinpath("data/profiles.json").read_text("utf-8"))
    return {name: profile_from({"name": name, **spec}) for name, spec in sorted(raw.items())}


#: Files added by `--profiles FILE` in this process, in order.
_added: list[str] = []


def add_profile_files(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Load user profile files besides the built-ins (`--profiles FILE`); a bad file fails here,
    before the command starts, with every problem it has."""
    before = list(_added)
    for p in paths:
        path = os.fspath(p)
        if path not in _added:
            _added.append(path)
    try:
        profiles()  # every problem now, not at first use
    except TraceError:
        _added[:] = before  # a bad file is not kept for the next command of this process
        raise


def clear_profile_files() -> None:
    """Forget the files `add_profile_files` added (a test's clean slate)."""
    _added.clear()


def profiles() -> dict[str, Profile]:
    """Every profile this process knows: the built-ins, then the user ones (env folder, then the
    `--profiles` files), by name."""
    return _registry(os.environ.get(PROFILES_ENV) or "", tuple(_added))


def _files(env: str, added: tuple[str, ...]) -> list[Path]:
    from .profilefile import PROFILE_SUFFIXES

    out: list[Path] = []
    if env:
        folder = Path(env)
        if folder.is_dir():
            out += sorted(p for p in folder.iterdir() if p.suffix.lower() in PROFILE_SUFFIXES and p.is_file())
        elif folder.is_file():
            out.append(folder)
        else:
            raise ProfileError(
                f"{PROFILES_ENV}={env}: no such folder; point it at a folder of profile files or unset it"
            )
    out += [Path(a) for a in added]
    unique: dict[Path, Path] = {}
    for p in out:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


@cache
def _registry(env: str, added: tuple[str, ...]) -> dict[str, Profile]:
    from .profilefile import read_profile_file

    out = dict(builtin_profiles())
    for path in _files(env, added):
        for prof in read_profile_file(path):
            if prof.name in out:
                other = out[prof.name]
                what = "a built-in profile" if other.built_in else f"already defined in {other.source}"
                raise ProfileError(
                    f"{path}: profile {prof.name!r}: name: {what}; a user profile never replaces another: "
                    "give it a name of its own (e.g. add a suffix)"
                )
            out[prof.name] = prof
    return out


def get_profile(name: str) -> Profile:
    try:
        return profiles()[name]
    except KeyError:
        raise TraceError(
            f"unknown profile {name!r}; choose one of {', '.join(profiles())} "
            f"(or load a user profile with --profiles FILE or {PROFILES_ENV}, docs/maintainers.md)"
        ) from None
