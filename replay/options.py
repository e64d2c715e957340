"""`--config FILE` of `replay run` and `replay sweep`: a YAML or JSON file of options, or a
finished run's run.json, which replays that run; and `settle`, which gives every option of a
command its value: the command line's, else the file's, else the default.

A file maps option keys, the names spelled with underscores (`turn_timeout` for --turn-timeout,
`header` for --header, `shards` for SHARDS_DIR), to values. Keys and values are checked against
the command's own option declarations (`traces.Option`), the ones its click options are made
from, so the two cannot drift apart. A run.json (recognised by its `trajbench_version`) is read
as the typed `RunInfo`; its `options` are the options the run was started with
(`replay.config.recorded_options`), read as a file's; its other fields are facts of the run.

The API key is never an option: a file that tries to set one is refused and told where the key
goes (the environment variable named by `api_key_env`), so no key ever sits in a file trajbench
reads or writes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import traces
from traces import Option, Values

from .errors import ReplayError, UsageProblem
from .results import RunInfo

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
        if info.options is None:
            raise ReplayError(
                f"{path}: written by trajbench {info.trajbench_version}, which did not record the run's options; "
                "pass them on the command line (or in a --config file) instead"
            )
        return OptionsFile(path, info.options, {}, info)
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


def settle(
    options: Sequence[Option], given: Mapping[str, Any], config_file: str | Path | None, *, command: str
) -> Values:
    """Every option of a command by key: the command line's value (`given`: only the options
    it gave), else the `--config` file's, else the declared default. An option given on the
    command line unsets the file's value of the options it excludes (--no-session-header, the
    file's header). Errors name the file, the line and the key, and say how to fix it;
    `command` (`trajbench replay run`) is the command whose --help describes the values."""
    file = read_options_file(config_file) if config_file is not None else None
    by_key = {o.key: o for o in options}
    from_file: dict[str, Any] = {}
    for key, raw in (file.values if file is not None else {}).items():
        assert file is not None
        where = file.where(key)
        option = by_key.get(key)
        if option is None:
            close = difflib.get_close_matches(key.replace("-", "_").lower(), by_key, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ReplayError(f"{where}: unknown key {key!r}{hint}; valid keys: {', '.join(sorted(by_key))}")
        try:
            from_file[key] = option.from_file(raw)
        except (ValueError, traces.TraceError) as exc:
            raise ReplayError(f"{where}: {key}: {exc}; fix the value (`{command} --help` describes it)") from None
    unset = {excluded for o in options if o.key in given for excluded in o.excludes}
    values = Values()
    for o in options:
        if o.key in given:
            values[o.key] = given[o.key]
        elif o.key in from_file and o.key not in unset:
            values[o.key] = from_file[o.key]
        else:
            values[o.key] = () if o.multiple else o.default
    for o in options:
        if o.kind == "argument":
            _check_folder(o, values, o.key in given, file)
        elif o.required and values[o.key] is None:
            raise UsageProblem(f"Missing option '{o.flag}' (or `{o.key}` in the --config file).")
    return values


def _check_folder(option: Option, values: Values, named: bool, file: OptionsFile | None) -> None:
    """SHARDS_DIR, from the command line or the file: the file's must be a folder, and a
    run.json's own shards must still hold the dataset the run replayed (`check_run_dataset`)."""
    folder = values[option.key]
    if folder is None:
        name = (option.metavar or option.key).strip("[]")
        raise UsageProblem(f"Missing argument '{name}' (or `{option.key}` in the --config file).")
    if file is None:
        return
    if not named and not Path(folder).is_dir():
        raise ReplayError(
            f"{file.where(option.key)}: {option.key}: no folder {folder}; build the shards there "
            "(`trajbench traces build`) or name the shard folder on the command line"
        )
    if file.run is not None:
        note = check_run_dataset(file.run, file.path, folder, named_on_command_line=named)
        if note:
            values.notes.append(note)
