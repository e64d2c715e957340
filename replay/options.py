"""Options files for `replay run` and `replay sweep --config FILE`: YAML or JSON, or a finished
run's run.json, which replays that run.

A file maps option names, spelled with underscores (`turn_timeout` for --turn-timeout, `header`
for --header, `shards` for SHARDS_DIR), to values; the command line wins over it. This module
reads a file and checks its shape; the CLI checks every key and value against the command's own
options, so the two cannot drift apart. A run.json (recognised by its `trajbench_version`) is read
as the typed `RunInfo` and `options_of_run` maps its fields back to the options that produced them;
its other fields are facts of the run (start time, dataset, counts) and are not options.

The API key is never an option: a file that tries to set one is refused and told where the key
goes (the environment variable named by `api_key_env`), so no key ever sits in a file trajbench
reads or writes.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

import traces

from .errors import ReplayError
from .results import EMBEDDED_EVIDENCE, RunInfo
from .sim import config_to_args, embedded_config

#: Keys that would hold a secret: refused, never echoed.
SECRET_KEYS = frozenset({"api_key", "apikey", "key", "openai_api_key", "token", "bearer_token", "password"})


@dataclass(frozen=True)
class OptionsFile:
    """What a `--config` file sets: option key → value (None: the option's default)."""

    path: Path
    values: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)  # where each key is, when known
    run: RunInfo | None = None  # the run, when the file is a run.json

    def where(self, key: str) -> str:
        """`FILE:LINE` of a key (`FILE` when the line is not known), to start an error with."""
        line = self.lines.get(key)
        return f"{self.path}:{line}" if line else str(self.path)


def read_options_file(path: str | Path) -> OptionsFile:
    """Read and shape-check an options file; errors name the file (and line) and the fix."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ReplayError(f"{path}: cannot read the options file ({reason}); check the path") from None
    data = _parse(path, text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"{type(data).__name__} {data!r}"[:60]
        raise ReplayError(
            f"{path}: expected a mapping of option names to values (e.g. `concurrency: 8`), found {kind}; fix the file"
        )
    lines = _key_lines(path, text)
    for key in data:
        if not isinstance(key, str):
            raise ReplayError(f"{path}: the key {key!r} is not a name; keys are option names like turn_timeout")
        if key.lower().replace("-", "_") in SECRET_KEYS:
            where = f"{path}:{lines[key]}" if key in lines else str(path)
            raise ReplayError(
                f"{where}: {key!r}: an API key is never read from a file (nor written to one); remove it, "
                "set it in the environment and name that variable with api_key_env (default OPENAI_API_KEY)"
            )
    if "trajbench_version" in data:  # a run.json: every field typed, the facts left alone
        try:
            info = traces.from_json(RunInfo, data, str(path))
        except traces.ContractError as exc:
            raise ReplayError(f"{exc}; pass a run.json written by `trajbench replay run`, unchanged") from None
        return OptionsFile(path, options_of_run(info), {}, info)
    return OptionsFile(path, {k: v for k, v in data.items() if v is not None}, lines)


def _parse(path: Path, text: str) -> Any:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text, object_pairs_hook=_no_duplicates(path))
        except json.JSONDecodeError as exc:
            raise ReplayError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); fix the file") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ReplayError(f"{where}: not valid YAML ({problem}); fix the file") from None


def _no_duplicates(path: Path) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ReplayError(f"{path}: the key {key!r} is given twice; keep one")
            out[key] = value
        return out

    return pairs


def _key_lines(path: Path, text: str) -> dict[str, int]:
    """Line of each top-level key (YAML's node marks; JSON parses as YAML too); a key given twice
    is an error, which YAML and JSON loaders would let pass silently (the last one wins)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    lines: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        line = key.start_mark.line + 1
        if key.value in lines:
            raise ReplayError(
                f"{path}:{line}: the key {key.value!r} is given twice (first on line {lines[key.value]}); keep one"
            )
        lines[key.value] = line
    return lines


def _served_name(profile: str) -> str | None:
    try:
        return traces.get_profile(profile).served_model_name
    except traces.TraceError:
        return None


def options_of_run(info: RunInfo) -> dict[str, Any]:
    """The options that replay the run a run.json describes (None values dropped: defaults).

    The endpoint is not an option when the run started its own simulator (its loopback port
    died with it): the embedded simulator is started again, with the run's settings expressed
    as --sim-args over the embedded defaults for the shards (empty when the run used them)."""
    embedded = info.simulator is not None or info.target_evidence == EMBEDDED_EVIDENCE
    sim_args = None
    if info.simulator is not None:
        # the embedded simulator answers from the shards being replayed, whichever they are
        ran = replace(info.simulator, shards=info.shards)
        sim_args = shlex.join(config_to_args(ran, embedded_config(info.shards))) or None
    values: dict[str, Any] = {
        "shards": info.shards,
        "endpoint": None if embedded else info.endpoint,
        "profile": info.profile,
        # run.json holds what was sent; what was the default then is left to the default now, so
        # another --profile or other shards on the command line are replayed as themselves
        "model": None if info.model == _served_name(info.profile) else info.model,
        "concurrency": info.concurrency,
        "trajectories": None if info.num_trajectories == info.dataset.instances else info.num_trajectories,
        "no_delays": not info.inject_delays,
        "stop_at_window_end": info.stop_at_window_end,
        "turn_timeout": info.turn_timeout,
        "max_idle": info.max_idle,
        "drain_timeout": info.drain_timeout,
        "header": list(info.headers) or None,
        "no_session_header": not info.headers,
        "workers": info.workers,
        "backend": None if info.backend == "auto" else info.backend,
        "ray_address": info.ray_address,
        "ray_resource": info.ray_resource,
        "min_workers": info.min_workers,
        "tokenizer": info.tokenizer,
        "api_key_env": info.api_key_env,
        "sim_args": sim_args,
        "max_completion_tokens": info.max_completion_tokens,
        "skip_preflight": info.skip_preflight,
        "max_response_mb": info.limits.max_response_bytes >> 20,
        "max_event_mb": info.limits.max_event_bytes >> 20,
        "max_header_kb": info.limits.max_header_bytes >> 10,
        "slo": info.slo.turn_spec() if info.slo is not None else None,
        "session_slo": info.slo.session_s if info.slo is not None else None,
        "replica_header": info.replica_header,
    }
    return {k: v for k, v in values.items() if v is not None}


def check_run_dataset(info: RunInfo, source: Path, shards_dir: str, *, named_on_command_line: bool) -> str | None:
    """Compare the dataset a run.json replayed with the shards about to be replayed.

    The run's own shards (from the file) whose content hash changed are refused: the replay would
    claim to be that run over other rows, and its numbers would look comparable when they are
    not. Shards named on the command line are the user's choice: the returned note says they
    differ (None when they do not)."""
    now = traces.Shards(shards_dir).content_hash
    was = info.dataset.content_hash
    if now == was:
        return None
    if named_on_command_line:
        return (
            f"note: {source} replayed dataset {info.dataset.name} (content hash {was[:16]}…); {shards_dir} holds "
            f"content hash {now[:16]}…: these are the run's options over other rows, not the same run"
        )
    raise ReplayError(
        f"{source}: the run replayed content hash {was[:16]}… but {shards_dir} now holds {now[:16]}…, so this "
        "would not be the same run; rebuild the shards from the same inputs and options (`trajbench traces "
        "build`), or name a shard folder on the command line to replay these options over other rows"
    )
