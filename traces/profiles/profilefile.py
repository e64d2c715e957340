"""User profile files: read, check field by field, write (docs/maintainers.md).

A profile file is YAML or JSON with the shape of the built-in `data/profiles.json`: a mapping of
profile name to its fields. Every problem is reported at once, one line each, as
`FILE: profile NAME: FIELD: what is wrong; how to fix it`, so a maintainer fixes the file in one
pass instead of one error per run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .registry import Profile, ProfileError, profile_from

PROFILE_SUFFIXES = (".json", ".yaml", ".yml")
#: A profile's name: what `--profile` takes and registries key on.
NAME_RULE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
THRESHOLD_KEYS = ("inline", "osl_min", "osl_max", "swebench")
#: field → (what it must be, an example value for the fix)
FIELDS: dict[str, tuple[str, str]] = {
    "description": ("a string", '"My model, reference run of 2026-11"'),
    "served_model_name": ("a non-empty string", '"org/My-Model"'),
    "tokenizer": ("NAME or NAME:PATH of `trajbench tokenizers`", '"qwen3.6" or "hf:org/My-Model"'),
    "sampling": ("a mapping of sampling parameter to a number or boolean", "{temperature: 1.0, top_p: 0.95}"),
    "max_new_tokens": ("an integer >= 1", "8192"),
    "chat_template_kwargs": ("a mapping (may be empty)", "{}"),
    "thresholds": (
        "a mapping with inline, osl_min, osl_max, swebench (numbers or null)",
        "{inline: 0.55, osl_min: 355, osl_max: 434, swebench: 0.69}",
    ),
    "swebench_template": ("a string naming an agent template", '"default"'),
}
OPTIONAL = {
    "derivation": "a mapping (written by `trajbench profiles derive`)",
    "output_consistency": "a mapping of empty, first_token, length to the largest share of answers allowed "
    "(docs/audits.md)",
    "turn_timeout_s": "seconds a turn may take, a number > 0 (default 86400, the reference client's)",
    "max_idle_s": "seconds a kept-alive socket may idle before it is not reused, a number > 0 (default 4.0)",
}
#: The output-consistency audit's limits a profile may state (docs/audits.md).
OUTPUT_CONSISTENCY_KEYS = ("empty", "first_token", "length")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile file; check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot read the profile file ({exc})") from None
    if path.suffix.lower() not in PROFILE_SUFFIXES:
        raise ProfileError(f"{path}: a profile file is .json, .yaml or .yml; rename it")
    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ProfileError(f"{path}: not valid {kind} ({first}); fix the syntax") from None


def check_profile(name: Any, spec: Any) -> list[str]:
    """The problems of one profile entry, each `profile NAME: FIELD: rule; fix` (empty when good)."""
    where = f"profile {name!r}"
    if not isinstance(name, str) or not NAME_RULE.match(name):
        return [
            f"{where}: name: must be 1-64 lower-case letters, digits, '.', '_' or '-' starting with a letter or "
            "digit; rename it (e.g. my-model-v1)"
        ]
    if not isinstance(spec, Mapping):
        return [f"{where}: must be a mapping of the profile fields ({', '.join(FIELDS)}); see docs/maintainers.md"]
    problems: list[str] = []

    def bad(key: str, rule: str | None = None) -> None:
        want, eg = FIELDS.get(key, (OPTIONAL.get(key, ""), ""))
        fix = f"; e.g. {key}: {eg}" if eg else ""
        problems.append(f"{where}: {key}: {rule or f'must be {want}, got {spec.get(key)!r}'}{fix}")

    for key in spec:
        if key not in FIELDS and key not in OPTIONAL:
            problems.append(
                f"{where}: {key}: unknown field; remove it (the fields are {', '.join([*FIELDS, *OPTIONAL])})"
            )
    for key in FIELDS:
        if key not in spec:
            bad(key, f"missing; add it ({FIELDS[key][0]})")
    if "description" in spec and not isinstance(spec["description"], str):
        bad("description")
    for key in ("served_model_name", "swebench_template"):
        if key in spec and not (isinstance(spec[key], str) and spec[key].strip()):
            bad(key)
    if "tokenizer" in spec:
        problems += _check_tokenizer(where, spec["tokenizer"])
    if "sampling" in spec:
        s = spec["sampling"]
        if not isinstance(s, Mapping) or not all(isinstance(k, str) for k in s):
            bad("sampling")
        else:
            for k, v in s.items():
                if not (_is_number(v) or isinstance(v, bool)):
                    bad("sampling", f"{k} must be a number or boolean, got {v!r}")
            if "max_completion_tokens" in s or "max_tokens" in s:
                bad("sampling", "holds the output cap; set it as max_new_tokens instead")
    if "max_new_tokens" in spec:
        m = spec["max_new_tokens"]
        if not (isinstance(m, int) and not isinstance(m, bool) and m >= 1):
            bad("max_new_tokens")
    if "chat_template_kwargs" in spec and not (
        isinstance(spec["chat_template_kwargs"], Mapping)
        and all(isinstance(k, str) for k in spec["chat_template_kwargs"])
    ):
        bad("chat_template_kwargs")
    if "thresholds" in spec:
        if isinstance(spec["thresholds"], Mapping):
            problems += [f"{where}: thresholds.{p}" for p in _check_thresholds(spec["thresholds"])]
        else:
            bad("thresholds")
    if "derivation" in spec and spec["derivation"] is not None and not isinstance(spec["derivation"], Mapping):
        bad("derivation")
    if spec.get("output_consistency") is not None:
        problems += [f"{where}: output_consistency{p}" for p in _check_output_consistency(spec["output_consistency"])]
    for key in ("turn_timeout_s", "max_idle_s"):
        if key in spec and not (_is_number(spec[key]) and spec[key] > 0):
            bad(key)
    return problems


def _check_output_consistency(limits: Any) -> list[str]:
    """Each problem as `.KEY: rule; fix` (or `: rule` for the whole mapping)."""
    if not isinstance(limits, Mapping):
        return [
            f": must be a mapping of {', '.join(OUTPUT_CONSISTENCY_KEYS)} to a share, got {limits!r}; e.g. {{length: 0.05}}"
        ]
    out = [
        f".{k}: unknown limit; remove it (the limits are {', '.join(OUTPUT_CONSISTENCY_KEYS)})"
        for k in limits
        if k not in OUTPUT_CONSISTENCY_KEYS
    ]
    for k in OUTPUT_CONSISTENCY_KEYS:
        if k not in limits:
            continue
        v: Any = limits[k]
        if not (_is_number(v) and 0 <= v <= 1):
            out.append(f".{k}: must be a share within [0, 1], got {v!r}; write 0.05 for 5 %")
    return out


def _check_tokenizer(where: str, spec: Any) -> list[str]:
    if not (isinstance(spec, str) and spec.strip()):
        return [f"{where}: tokenizer: must be NAME or NAME:PATH of `trajbench tokenizers`, got {spec!r}"]
    try:
        from ..tokenizers import TOKENIZERS
    except ImportError:  # a trajbench without the tokenizers room: the name cannot be checked here
        return []
    # A kind alone is fine even for one that needs a path (the built-ins say `kimi`): the path
    # of this machine's copy is given where it is loaded (--tokenizer kimi:DIR).
    kind, sep, _ = spec.partition(":")
    known = TOKENIZERS.get(kind)
    if known is None:
        return [f"{where}: tokenizer: unknown tokenizer {kind!r}; choose one of {', '.join(sorted(TOKENIZERS))}"]
    if known.path is None and sep:
        return [f"{where}: tokenizer: {kind} takes no path; write tokenizer: {kind}"]
    return []


def _check_thresholds(t: Mapping[str, Any]) -> list[str]:
    out = [
        f"{k}: unknown threshold; remove it (the thresholds are {', '.join(THRESHOLD_KEYS)})"
        for k in t
        if k not in THRESHOLD_KEYS
    ]
    out += [f"{k}: missing; add it (a number, or null when there is none)" for k in THRESHOLD_KEYS if k not in t]
    for k in THRESHOLD_KEYS:
        v = t.get(k)
        if v is None:
            continue
        if not _is_number(v):
            out.append(f"{k}: must be a number or null, got {v!r}")
        elif k in ("inline", "swebench") and not 0 < v <= 1:
            out.append(f"{k}: must be a fraction in (0, 1], got {v!r}; write 0.55 for 55 %")
        elif k.startswith("osl") and v <= 0:
            out.append(f"{k}: must be > 0 tokens, got {v!r}")
    lo: Any = t.get("osl_min")
    hi: Any = t.get("osl_max")
    if (lo is None) != (hi is None):
        out.append("osl_min/osl_max: give both ends of the band or neither")
    elif _is_number(lo) and _is_number(hi) and float(lo) >= float(hi):
        out.append(f"osl_min/osl_max: the band {lo}-{hi} is empty; osl_min must be below osl_max")
    return out


def read_profile_file(path: str | Path) -> list[Profile]:
    """The profiles of a user file, each with the file as its source; every problem at once."""
    p = Path(path)
    data = _load(p)
    if not isinstance(data, Mapping) or not data:
        raise ProfileError(
            f"{p}: a profile file is a mapping of profile name to its fields (like the built-ins, "
            "`trajbench profiles --json`); see docs/maintainers.md"
        )
    problems = [line for name, spec in data.items() for line in check_profile(name, spec)]
    if problems:
        raise ProfileError("\n".join(f"{p}: {line}" for line in problems))
    return [profile_from({"name": name, **spec}, source=str(p)) for name, spec in data.items()]


def profile_text(profiles: Sequence[Profile], suffix: str = ".yaml") -> str:
    """A profile file holding `profiles` (YAML, or JSON for a .json suffix); same input, same bytes."""
    data = {p.name: {k: v for k, v in p.content().items() if k != "name"} for p in profiles}
    if suffix.lower() == ".json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def write_profile_file(path: str | Path, profiles: Sequence[Profile]) -> Path:
    """Write a profile file (atomically) and read it back, so what is written is what loads."""
    p = Path(path)
    if p.suffix.lower() not in PROFILE_SUFFIXES:
        raise ProfileError(f"{p}: a profile file is .json, .yaml or .yml; rename it")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(profile_text(profiles, p.suffix), encoding="utf-8")
    tmp.replace(p)
    read_profile_file(p)
    return p
