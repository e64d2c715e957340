"""Files that cross a package boundary are frozen dataclasses, read and written here.

Every JSON file one package writes and another reads (manifest.json, stats.json, run.json,
result_summary.json, sweep.json, scores.json, osl.json) is a frozen dataclass in the package that
owns it, declared with its file name (`FILE`). `JsonFile.read(folder)` / `.write(folder)` convert
between the dataclass and JSON from the field types alone, so a reader never picks values out of
a dict by string, and a file that misses a field or holds the wrong type fails with its path and
the field's name instead of a KeyError far away.

Supported field types: str, int, float, bool, None, Any, `X | None`, `list[T]`, `tuple[T, ...]`,
`dict[str, T]`, nested dataclasses and NamedTuples (written as JSON arrays, for compact lists such
as the manifest's instances). Keys a file has and the dataclass does not are ignored, so a newer
writer's additions do not break an older reader. Writes are atomic (a temporary file, then a
rename) and deterministic (`sort_keys` unless the class keeps its own order).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

import orjson

from .errors import TraceError

T = TypeVar("T")


class ContractError(TraceError):
    """A file that does not hold what its contract says: the path, the field and what was found."""


_PLAIN = frozenset({str, int, float, bool})


def to_json(value: Any) -> Any:
    """A dataclass (or NamedTuple, list, dict of them) as plain JSON values, in field order."""
    if value is None or type(value) in _PLAIN:  # most values of a long file (scores.json's turns)
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: a compact array
        return [to_json(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(cls: type[T], data: Any, source: str = "") -> T:
    """Build `cls` from plain JSON values, checking every field against its type; `source` (a
    file) starts every error message, followed by the field's path in the file."""
    try:
        return typing.cast(T, _convert(cls, data, ""))
    except ContractError as exc:
        raise ContractError(f"{source or cls.__name__}: {exc}") from None


def _fail(where: str, want: str, got: Any) -> ContractError:
    shown = json.dumps(got)[:60] if not isinstance(got, str) else repr(got[:60])
    return ContractError(f"{where or 'the file'}: expected {want}, found {shown}")


def _at(where: str, step: str) -> str:
    return f"{where}{step}" if step.startswith("[") or not where else f"{where}.{step}"


@functools.cache
def _hints(tp: type) -> dict[str, Any]:
    """A class's resolved field types, once per class: resolving them is the slow part of reading
    a long list of small records (the manifest's instances, thousands of them)."""
    return get_type_hints(tp)


def _convert(tp: Any, data: Any, where: str) -> Any:
    if tp is Any:
        return data
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in (o for o in options if o is not type(None)):
            try:
                return _convert(option, data, where)
            except ContractError as exc:
                errors.append(exc)
        raise errors[0] if errors else _fail(where, "a value", data)
    if origin in (list, tuple):
        args = get_args(tp)
        if not isinstance(data, list):
            raise _fail(where, "a list", data)
        item = args[0] if args else Any
        items = [_convert(item, v, _at(where, f"[{k}]")) for k, v in enumerate(data)]
        return items if origin is list else tuple(items)
    if origin is dict:
        _, value_type = get_args(tp) or (str, Any)
        if not isinstance(data, dict):
            raise _fail(where, "an object", data)
        return {k: _convert(value_type, v, _at(where, k)) for k, v in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise _fail(where, f"an object ({tp.__name__})", data)
        hints = _hints(tp)
        values = {}
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            if f.name in data:
                values[f.name] = _convert(hints[f.name], data[f.name], _at(where, f.name))
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ContractError(f"{where + ': ' if where else ''}the field {f.name!r} is missing")
        try:
            return tp(**values)
        except ValueError as exc:  # the class's own check of its values (__post_init__)
            raise ContractError(f"{where + ': ' if where else ''}{exc}") from None
    if isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields"):  # NamedTuple
        hints = _hints(tp)
        if not isinstance(data, list) or len(data) != len(tp._fields):
            raise _fail(where, f"a list of {len(tp._fields)} ({', '.join(tp._fields)})", data)
        return tp(*(_convert(hints[n], v, _at(where, n)) for n, v in zip(tp._fields, data, strict=True)))
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise _fail(where, "a number", data)
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise _fail(where, "an integer", data)
        return data
    if tp in (str, bool):
        if not isinstance(data, tp):
            raise _fail(where, tp.__name__, data)
        return data
    if tp is type(None):
        if data is not None:
            raise _fail(where, "null", data)
        return None
    raise TypeError(f"{where}: unsupported field type {tp!r}")


class JsonFile:
    """A dataclass stored as one JSON file in a folder: `FILE` names it, `SORT_KEYS` says whether
    keys are sorted (deterministic bytes) or kept in field order (a format another tool reads)."""

    FILE: ClassVar[str]
    SORT_KEYS: ClassVar[bool] = True

    @classmethod
    def path(cls, folder: str | os.PathLike[str]) -> Path:
        return Path(folder) / cls.FILE

    @classmethod
    def exists(cls, folder: str | os.PathLike[str]) -> bool:
        return cls.path(folder).is_file()

    @classmethod
    def read(cls: type[T], folder: str | os.PathLike[str]) -> T:
        path = Path(folder) / cls.FILE  # type: ignore[attr-defined]
        try:
            data = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            raise ContractError(f"{path}: no such file") from None
        except (OSError, ValueError) as exc:
            raise ContractError(f"{path}: not readable JSON ({exc})") from None
        return from_json(cls, data, str(path))

    def to_json(self) -> dict[str, Any]:
        return typing.cast(dict[str, Any], to_json(self))

    def text(self) -> str:
        # orjson: several times faster than json on the large files (a 60k-turn run's scores)
        option = orjson.OPT_INDENT_2 | (orjson.OPT_SORT_KEYS if self.SORT_KEYS else 0)
        return orjson.dumps(self.to_json(), option=option).decode("utf-8") + "\n"

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write atomically: readers never see a half-written file."""
        path = self.path(folder)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(self.text(), encoding="utf-8")
        os.replace(tmp, path)
        return path
