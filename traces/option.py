"""One declaration per command-line option: its name, type, default, help, range or choices,
and whether a run records it. The command line (cli.py makes a click option of each), option
files (`--config`: the keys and the checks of their values) and what a run records for
`--config run.json` are all made from the same declaration, so they cannot drift apart.

A dataclass can declare its options on its fields (`declare` as a field's default): the field
is the option's value, named after the field unless told otherwise. A field that several
options set, or one whose option says something else (`--no-delays` sets `inject_delays`),
names its options and the two functions that map between their values and the field
(`build`, `record`); `declared` lists a class's declarations in field order.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: The field metadata key under which a declaration sits.
_KEY = "trajbench.options"


@dataclass(frozen=True)
class Option:
    """One option. `name` is the long name (`turn-timeout`: `--turn-timeout`); its key, in a
    `--config` file and in what a run records, is the name with underscores (`turn_timeout`)."""

    name: str
    help: str
    type: type = str  # str, int, float, or bool (a flag)
    default: Any = None  # when neither the command line nor a file gives it
    multiple: bool = False  # repeatable: a tuple of strings (a file gives a list, or one string)
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    open_minimum: bool = False  # the minimum itself is refused (x > minimum)
    short: str | None = None  # e.g. "-c"
    #: how the command line shows it, beyond its type: "argument" (a positional SHARDS_DIR),
    #: "dir" (a folder to write), "profile" (a model profile's name), "concurrency" (one integer:
    #: a list is refused as a sweep's)
    kind: str = ""
    metavar: str | None = None
    required: bool = False  # after the command line and the file: one of them must give it
    #: keys of the options it cannot go with: given on the command line, it unsets theirs
    #: when they came from a file
    excludes: tuple[str, ...] = ()
    #: a run records its value (run.json's `options`), so `--config run.json` gives it back;
    #: False for what says nothing about the run (the progress display, the output folder)
    recorded: bool = True
    #: a file's value → the option's value, when not of the plain type (ValueError: what was
    #: expected); e.g. a sweep's concurrencies, a list or one number
    read: Callable[[Any], Any] | None = None
    #: a further check of a value, returning it as it is to be used (raises ValueError or the
    #: package's error with the reason); e.g. a profile name, checked against the known ones
    check: Callable[[Any], Any] | None = None

    @property
    def key(self) -> str:
        return self.name.replace("-", "_")

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def shows_default(self) -> bool:
        """`--help` shows the default: a value, not a flag's off, an empty text or nothing."""
        return not (self.default is None or self.default is False or self.default in ("", ()))

    def wanted(self) -> str:
        """What a value must be, as an error says it ("an integer >= 1")."""
        if self.type is bool:
            return "true or false"
        if self.multiple:
            return "a list of strings"
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        noun = {int: "an integer", float: "a finite number"}.get(self.type, "a string")
        if self.minimum is not None:
            return f"{noun} {'>' if self.open_minimum else '>='} {self.minimum}"
        return noun

    def from_file(self, raw: Any) -> Any:
        """A value as a file gives it, checked strictly (`true` is no number, `"8"` no integer)
        and converted as the command line would; ValueError says what was expected."""
        if self.read is not None:
            value = self.read(raw)
        elif self.type is bool:
            value = raw if isinstance(raw, bool) else self._wrong(raw)
        elif self.multiple:
            items = [raw] if isinstance(raw, str) else raw
            if not (isinstance(items, list) and all(isinstance(v, str) for v in items)):
                self._wrong(raw)
            value = tuple(items)
        elif self.type is int:
            value = raw if isinstance(raw, int) and not isinstance(raw, bool) else self._wrong(raw)
        elif self.type is float:
            ok = isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw)
            value = float(raw) if ok else self._wrong(raw)
        else:
            value = raw if isinstance(raw, str) else self._wrong(raw)
        if self.choices and value not in self.choices:
            self._wrong(raw)
        if self.minimum is not None and isinstance(value, (int, float)) and self.out_of_range(value):
            self._wrong(raw)
        return self.check(value) if self.check is not None else value

    def out_of_range(self, value: float) -> bool:
        assert self.minimum is not None
        return value <= self.minimum if self.open_minimum else value < self.minimum

    def problem(self, value: Any) -> str | None:
        """What is wrong with a value the library was handed (None: nothing), as
        `--workers must be >= 1, got 0`; the checks a dataclass's own `check` starts with."""
        if self.choices and value not in self.choices:
            return f"{self.flag} {value!r}: choose one of {', '.join(self.choices)}"
        # NaN passes every comparison and infinity is not JSON (run.json): no option takes either
        if self.type is float and isinstance(value, float) and not math.isfinite(value):
            return f"{self.flag} must be a finite number, got {value}"
        if self.minimum is not None and isinstance(value, (int, float)) and self.out_of_range(value):
            return f"{self.flag} must be {'>' if self.open_minimum else '>='} {self.minimum}, got {value}"
        return None

    def _wrong(self, raw: Any) -> Any:
        raise ValueError(f"expected {self.wanted()}, found {json.dumps(raw, default=str)[:60]}")


class Values(dict[str, Any]):
    """A command's option values by key (every option of the command, settled: the command
    line's, else a file's, else the default), and the notes for the user their settling and
    use left (printed on stderr)."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        super().__init__(values or {})
        self.notes: list[str] = []


Build = Callable[[Values], Any]
Record = Callable[[Any], Mapping[str, Any]]


@dataclass(frozen=True)
class Declared:
    """The options that set one field, and how: `build` makes the field's value from the
    options' values (by key; default: the one option's value), `record` gives back the
    options' values that make an instance's field (default: the field's value)."""

    field: str
    options: tuple[Option, ...]
    build: Build | None = None
    record: Record | None = None

    def value(self, values: Values) -> Any:
        if self.build is not None:
            return self.build(values)
        (option,) = self.options
        return values[option.key]

    def recorded(self, instance: Any) -> dict[str, Any]:
        """The recorded options' values that give `instance` its field (None ones left out)."""
        if self.record is not None:
            given = dict(self.record(instance))
        elif len(self.options) == 1:
            given = {self.options[0].key: getattr(instance, self.field)}
        else:  # set by no option (built from others): nothing to record
            given = {}
        keep = {o.key for o in self.options if o.recorded}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in given.items() if k in keep and v is not None}


def declare(
    *options: Option | str,
    default: Any = dataclasses.MISSING,
    build: Build | None = None,
    record: Record | None = None,
    repr: bool = True,
    **settings: Any,
) -> Any:
    """A dataclass field declared with the options that set it: `declare("help text", default=…,
    minimum=1)` for the field's own option (named after the field; `name=` for another name),
    or `declare(Option(…), Option(…), build=…, record=…)` for options that together make it.
    The option's default is the field's unless `settings` says another."""
    if len(options) == 1 and isinstance(options[0], str):
        if default is not dataclasses.MISSING:
            settings.setdefault("default", default)
            settings.setdefault("type", type(default) if default is not None else str)
        options = (Option(settings.pop("name", ""), options[0], **settings),)
    elif settings:
        raise TypeError(f"settings {sorted(settings)} apply to a field's own option only")
    spec = {"options": tuple(o for o in options if isinstance(o, Option)), "build": build, "record": record}
    return dataclasses.field(default=default, repr=repr, metadata={_KEY: spec})


def declared(cls: type) -> tuple[Declared, ...]:
    """The declarations on a dataclass's fields, in field order; a field's own option takes the
    field's name when it was given none."""
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        if spec is None:
            continue
        named = tuple(o if o.name else dataclasses.replace(o, name=f.name.replace("_", "-")) for o in spec["options"])
        out.append(Declared(f.name, named, spec["build"], spec["record"]))
    return tuple(out)


def options_of(cls: type) -> tuple[Option, ...]:
    """Every option a dataclass declares, in field order."""
    return tuple(o for d in declared(cls) for o in d.options)


__all__ = ["Build", "Declared", "Option", "Record", "Values", "declare", "declared", "options_of"]
