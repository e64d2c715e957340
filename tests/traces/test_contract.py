"""Typed JSON files (traces.contract): every supported field type survives a write and a read,
the bytes are deterministic, and a file that breaks its contract fails with its path and the
field's name."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from traces import ContractError, JsonFile, from_json, to_json


class Pair(NamedTuple):
    name: str
    number: int


@dataclass(frozen=True)
class Inner:
    label: str
    weight: float | None = None


@dataclass(frozen=True)
class Everything(JsonFile):
    FILE = "everything.json"

    title: str
    number: int
    ratio: float
    flag: bool
    anything: Any
    maybe: int | None
    items: list[int]
    fixed: tuple[str, ...]
    table: dict[str, float]
    inner: Inner
    inners: list[Inner]
    pairs: list[Pair]
    by_name: dict[str, Inner] = field(default_factory=dict)
    later: str | None = None  # a field a file written before it lacks


SAMPLE = Everything(
    title="é and ✓",
    number=3,
    ratio=0.25,
    flag=True,
    anything={"free": [1, "two", None]},
    maybe=None,
    items=[3, 1, 2],
    fixed=("a", "b"),
    table={"z": 1.0, "a": 2.5},
    inner=Inner("x", 1.5),
    inners=[Inner("y"), Inner("z", 0.0)],
    pairs=[Pair("p", 1), Pair("q", 2)],
    by_name={"k": Inner("k", 2.0)},
    later="now",
)


def test_every_field_type_round_trips(tmp_path: Path) -> None:
    path = SAMPLE.write(tmp_path)
    assert path == tmp_path / "everything.json" and Everything.exists(tmp_path)
    assert Everything.read(tmp_path) == SAMPLE
    assert from_json(Everything, to_json(SAMPLE)) == SAMPLE
    assert to_json(SAMPLE)["pairs"] == [["p", 1], ["q", 2]]  # a NamedTuple is a compact array
    assert [p.name for p in tmp_path.iterdir()] == ["everything.json"]  # no temporary file left


def test_the_same_value_writes_the_same_bytes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    SAMPLE.write(tmp_path / "a")
    again = from_json(Everything, to_json(SAMPLE))
    again.write(tmp_path / "b")
    first, second = ((tmp_path / d / "everything.json").read_bytes() for d in ("a", "b"))
    assert first == second
    assert first.index(b'"anything"') < first.index(b'"title"')  # keys sorted: the bytes do not follow field order


def test_a_missing_field_with_a_default_reads_as_the_default_and_unknown_keys_are_ignored() -> None:
    data = to_json(SAMPLE)
    del data["later"], data["by_name"]
    data["added_by_a_newer_writer"] = 1
    assert from_json(Everything, data) == Everything(**{**SAMPLE.__dict__, "later": None, "by_name": {}})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"number": "3"}, "number: expected an integer, found '3'"),
        ({"number": True}, "number: expected an integer, found true"),
        ({"ratio": "x"}, "ratio: expected a number, found 'x'"),
        ({"flag": 1}, "flag: expected bool, found 1"),
        ({"items": [1, "2"]}, "items[1]: expected an integer, found '2'"),
        ({"inner": {"weight": 1.0}}, "inner: the field 'label' is missing"),
        ({"inners": [{"label": "y", "weight": "heavy"}]}, "inners[0].weight: expected a number, found 'heavy'"),
        ({"pairs": [["p"]]}, 'pairs[0]: expected a list of 2 (name, number), found ["p"]'),
        ({"table": []}, "table: expected an object, found []"),
    ],
)
def test_a_broken_file_names_its_path_and_the_field(change: dict[str, Any], message: str, tmp_path: Path) -> None:
    SAMPLE.write(tmp_path)
    path = tmp_path / "everything.json"
    data = json.loads(path.read_text())
    data.update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(ContractError) as caught:
        Everything.read(tmp_path)
    assert str(caught.value) == f"{path}: {message}"


def test_a_missing_or_unreadable_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match=r"everything\.json: no such file"):
        Everything.read(tmp_path)
    (tmp_path / "everything.json").write_text("{not json")
    with pytest.raises(ContractError, match=r"everything\.json: not readable JSON"):
        Everything.read(tmp_path)
