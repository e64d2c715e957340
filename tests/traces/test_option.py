"""Option declarations (traces.option): a file's values are checked strictly against the
declared type and range, a library value gets the same checks, and a dataclass's fields
declare their options (named after the field unless told)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from traces import Option, Values, declare, declared, options_of

TIMEOUT = Option("turn-timeout", "Seconds per turn.", type=float, default=600.0, minimum=0, open_minimum=True)
WORKERS = Option("workers", "Workers.", type=int, default=1, minimum=1)
HEADER = Option("header", "A header (repeatable).", multiple=True)
BACKEND = Option("backend", "Where.", choices=("auto", "ray"), default="auto")
FLAG = Option("no-delays", "Skip delays.", type=bool, default=False)


@pytest.mark.parametrize(
    ("option", "raw", "value"),
    [
        (TIMEOUT, 45, 45.0),  # an integer is a number
        (TIMEOUT, 0.5, 0.5),
        (WORKERS, 3, 3),
        (HEADER, "X-A", ("X-A",)),  # one string for a list of one
        (HEADER, ["X-A", "X-B"], ("X-A", "X-B")),
        (BACKEND, "ray", "ray"),
        (FLAG, True, True),
    ],
)
def test_a_files_value_is_converted_as_the_command_line_would(option: Option, raw: Any, value: Any) -> None:
    assert option.from_file(raw) == value


@pytest.mark.parametrize(
    ("option", "raw", "message"),
    [
        (TIMEOUT, "soon", 'expected a finite number > 0, found "soon"'),
        (TIMEOUT, 0, "expected a finite number > 0, found 0"),
        (TIMEOUT, True, "expected a finite number > 0, found true"),
        (WORKERS, "8", 'expected an integer >= 1, found "8"'),
        (WORKERS, 2.5, "expected an integer >= 1, found 2.5"),
        (WORKERS, 0, "expected an integer >= 1, found 0"),
        (HEADER, ["X-A", 3], 'expected a list of strings, found ["X-A", 3]'),
        (BACKEND, "slurm", 'expected one of auto, ray, found "slurm"'),
        (FLAG, 1, "expected true or false, found 1"),
        (FLAG, "yes", 'expected true or false, found "yes"'),
    ],
)
def test_a_files_wrong_value_says_what_was_expected(option: Option, raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        option.from_file(raw)
    assert str(caught.value) == message


def test_a_library_value_gets_the_range_and_choice_checks() -> None:
    assert WORKERS.problem(1) is None and WORKERS.problem(None) is None
    assert WORKERS.problem(0) == "--workers must be >= 1, got 0"
    assert TIMEOUT.problem(0.0) == "--turn-timeout must be > 0, got 0.0"
    assert BACKEND.problem("slurm") == "--backend 'slurm': choose one of auto, ray"


def test_help_shows_a_default_only_when_it_is_a_value() -> None:
    shown = {o.name: o.shows_default for o in (TIMEOUT, HEADER, FLAG, Option("n", "", type=int, default=0))}
    assert shown == {"turn-timeout": True, "header": False, "no-delays": False, "n": True}  # 0 is a value


def _not(v: Values) -> bool:
    return not v["no_delays"]


@dataclass(frozen=True)
class Settings:
    path: str = declare(Option("path", "", kind="argument"))
    num_items: int | None = declare("How many.", default=None, name="items", type=int, minimum=1)
    retries: int = declare("Retries.", default=0, minimum=0)
    delays: bool = declare(FLAG, default=True, build=_not, record=lambda s: {"no_delays": not s.delays})
    plain: str = "not an option"


def test_fields_declare_their_options_in_order_named_after_the_field() -> None:
    assert [o.key for o in options_of(Settings)] == ["path", "items", "retries", "no_delays"]
    retries = options_of(Settings)[2]
    assert (retries.flag, retries.type, retries.default, retries.minimum) == ("--retries", int, 0, 0)
    assert Settings(path="p").retries == 0 and Settings(path="p").delays  # the fields keep their defaults


def test_a_field_is_built_from_its_options_and_gives_them_back() -> None:
    by_field = {d.field: d for d in declared(Settings)}
    values = Values({"path": "p", "items": 3, "retries": 2, "no_delays": True})
    built = Settings(**{name: d.value(values) for name, d in by_field.items()})
    assert built == Settings("p", 3, 2, False)
    recorded: dict[str, Any] = {}
    for d in by_field.values():
        recorded.update(d.recorded(built))
    assert recorded == {"path": "p", "items": 3, "retries": 2, "no_delays": True}
    assert by_field["num_items"].recorded(Settings("p")) == {}  # None: the default, not recorded
