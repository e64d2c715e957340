"""The inline-accuracy rules of docs/accuracy.md as pure functions over one assistant message.

The rules themselves are data (`eval/data/scoring.json`: domain regex, intent regexes, bash
separators, wrappers, the executable alias table, with a version), so a rules update is a data
change that `scores.json` records by version and hash. The defaults reproduce the reference
scorer exactly, including its edges:

- quoted spans ('…', "…" with backslash escapes, `…`) are replaced by a blank before splitting,
  so a `|` or `;` inside quotes never splits a command;
- wrappers (env, time, nice, sudo, exec, command) are dropped only as exact first words, and
  options after a wrapper are not skipped (`sudo -E make` yields no action);
- unknown executables (cd, echo, ./run.sh, …) are ignored, not counted as mismatches;
- `intent: I042` is matched case-insensitively; a bare code must be upper-case `I042`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import EvalError

_CACHE_SIZE = 100_000

_KEYS = (
    "version",
    "workflow_id_regex",
    "intent_regex",
    "bare_intent_regex",
    "bash_tool_names",
    "command_keys",
    "separators_regex",
    "quoted_regex",
    "env_assignment_regex",
    "version_suffix_regex",
    "wrappers",
    "aliases",
)


@dataclass(frozen=True)
class Rules:
    """One version of the scoring rules, compiled."""

    version: str
    sha256: str
    source: str
    workflow_id: re.Pattern[str]
    intent: re.Pattern[str]
    bare_intent: re.Pattern[str]
    bash_tool_names: frozenset[str]
    command_keys: tuple[str, ...]
    separators: re.Pattern[str]
    quoted: re.Pattern[str]
    env_assignment: re.Pattern[str]
    version_suffix: re.Pattern[str]
    wrappers: frozenset[str]
    aliases: Mapping[str, str]
    # parsed commands: repeats of a run answer alike, so each distinct command is parsed once
    cache: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    def describe(self) -> dict[str, Any]:
        """What `scores.json` records about the rules it was scored with."""
        return {"version": self.version, "sha256": self.sha256, "source": self.source}

    def domain(self, trajectory_id: str) -> str:
        return "workflow" if self.workflow_id.match(trajectory_id) else "coding"


def _compile(raw: dict[str, Any], source: str, text: str) -> Rules:
    missing = [k for k in _KEYS if k not in raw]
    if missing:
        raise EvalError(f"{source}: scoring rules lack {', '.join(missing)}; start from eval/data/scoring.json")
    try:
        return Rules(
            version=str(raw["version"]),
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            source=source,
            workflow_id=re.compile(raw["workflow_id_regex"]),
            intent=re.compile(raw["intent_regex"], re.IGNORECASE),
            bare_intent=re.compile(raw["bare_intent_regex"]),
            bash_tool_names=frozenset(raw["bash_tool_names"]),
            command_keys=tuple(raw["command_keys"]),
            separators=re.compile(raw["separators_regex"]),
            quoted=re.compile(raw["quoted_regex"]),
            env_assignment=re.compile(raw["env_assignment_regex"]),
            version_suffix=re.compile(raw["version_suffix_regex"]),
            wrappers=frozenset(raw["wrappers"]),
            aliases=dict(raw["aliases"]),
        )
    except re.error as exc:
        raise EvalError(f"{source}: a regex of the scoring rules does not compile ({exc})") from None


@cache
def default_rules() -> Rules:
    """The official rules shipped in `eval/data/scoring.json`."""
    text = resources.files("eval").joinpath("data/scoring.json").read_text("utf-8")
    return _compile(json.loads(text), "default", text)


def load_rules(path: str | Path | None = None) -> Rules:
    """The rules in `path` (a JSON file shaped like eval/data/scoring.json), else the default."""
    if path is None:
        return default_rules()
    p = Path(path)
    try:
        text = p.read_text("utf-8")
        raw = json.loads(text)
    except OSError as exc:
        raise EvalError(f"{p}: cannot read scoring rules ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise EvalError(f"{p}:{exc.lineno}: scoring rules are not valid JSON ({exc.msg})") from None
    return _compile(raw, p.name, text)


# ---------------------------------------------------------------- workflow


def model_intent(reasoning: str | None, content: str | None, rules: Rules | None = None) -> str | None:
    """The model's intent code: `intent: Ixxx` in reasoning then content, else the last bare
    `Ixxx` in reasoning then content; upper-cased. None when there is none."""
    r = rules or default_rules()
    fields = (reasoning or "", content or "")
    for text in fields:
        m = r.intent.search(text)
        if m:
            return m.group(1).upper()
    for text in fields:
        found = r.bare_intent.findall(text)
        if found:
            return f"I{found[-1]}"
    return None


def intent_score(intent: str | None, codes: Iterable[str]) -> float:
    return 1.0 if intent is not None and intent in {c.upper() for c in codes} else 0.0


# ---------------------------------------------------------------- coding


def command_actions(command: str, rules: Rules | None = None) -> list[str]:
    """The normalised actions of one bash command line, in order."""
    r = rules or default_rules()
    hit = r.cache.get(command)
    if hit is not None:
        return list(hit)
    actions: list[str] = []
    for stage in r.separators.split(r.quoted.sub(" ", command)):
        words = stage.split()
        while words and (r.env_assignment.match(words[0]) or words[0] in r.wrappers):
            words = words[1:]
        if not words:
            continue
        exe = r.version_suffix.sub("", words[0].rsplit("/", 1)[-1].lower())
        action = r.aliases.get(exe)
        if action:
            actions.append(action)
    if len(r.cache) >= _CACHE_SIZE:
        r.cache.clear()
    r.cache[command] = tuple(actions)
    return actions


def tool_call_command(call: Any, rules: Rules | None = None) -> str | None:
    """The command string of one bash tool call (`command`, else `cmd`), or None."""
    r = rules or default_rules()
    if not isinstance(call, dict):
        return None
    fn = call.get("function") or {}
    if not isinstance(fn, dict) or fn.get("name") not in r.bash_tool_names:
        return None
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None  # a model that emits broken JSON has no action here
    if not isinstance(args, dict):
        return None
    for key in r.command_keys:
        value = args.get(key)
        if value:
            return value if isinstance(value, str) else None
    return None


def message_actions(tool_calls: Iterable[Any] | None, rules: Rules | None = None) -> list[str]:
    """The actions of an assistant message: every bash call's actions, in call order."""
    r = rules or default_rules()
    out: list[str] = []
    for call in tool_calls or ():
        command = tool_call_command(call, r)
        if command is not None:
            out.extend(command_actions(command, r))
    return out


def action_score(produced: Iterable[str], recorded: Iterable[str]) -> float | None:
    """Multiset intersection over union; None when the recording has no action (excluded)."""
    want = Counter(recorded)
    if not want:
        return None
    got = Counter(produced)
    return sum((want & got).values()) / sum((want | got).values())
