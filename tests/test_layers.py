"""The layer contract (docs/architecture.md): imports point down, through front doors.

- Packages: cli → jobs → eval → replay → traces; nothing imports upward.
- Inside a package, rooms (sub-packages) are layered too (`ROOM_LAYERS`, lowest first): a module
  imports from its own room and from lower rooms, never from a higher one or a top-level module
  of its package that sits above the rooms.
- Another package's or room's code is reached only through its front door (the package, a room's
  `__init__`, or a listed door module such as `traces.png`), never through a module inside it.
- The simulator (`replay.sim`) stands alone: it imports nothing of the client, only traces.

Every import is checked, including imports inside functions and under TYPE_CHECKING, from the
source (ast), so the contract holds for code paths no test runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("traces", "replay", "eval", "jobs", "cli")  # lowest first
#: Rooms of each package, lowest first; the package's own top-level modules that are not listed
#: in BASE sit above every room (they put the rooms together: run, sweep, options, publish).
ROOM_LAYERS = {
    "traces": [
        "traces.inputs",
        "traces.formats",
        "traces.synth",
        "traces.tokenizers",
        "traces.profiles",
        "traces.requests",
        "traces.shards",
        "traces.analysis",
        "traces.cards",
    ],
    "replay": [
        "replay.client",
        "replay.results",
        "replay.loop",
        "replay.engine",
        "replay.cacheobs",
        "replay.report",
        "replay.calibrate",
    ],
    "eval": ["eval.swebench", "eval.audits", "eval.submission", "eval.explore"],
}
#: Top-level modules under every room: the package's own foundations.
BASE = {
    "traces": {
        "traces.errors",
        "traces.model",
        "traces.version",
        "traces.lazy",
        "traces.canonical",
        "traces.contract",
        "traces.env",
        "traces.option",
        "traces.distribution",
        "traces.sizes",
        "traces.text",
        "traces.docs",
        "traces.outdir",
        "traces.progress",
        "traces.parallel",
        "traces.axes",
        "traces.png",
    },
    "replay": {"replay.errors"},
    "eval": {"eval.errors", "eval.layout"},
}
#: Modules that are front doors of their own (besides packages and rooms).
DOOR_MODULES = {"traces.png", "traces.lazy"}
STANDALONE = "replay.sim"  # imports traces and itself only


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # the module the statement names
    line: int


def _module_of(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imports() -> list[Import]:
    files = [p for pkg in ("traces", "replay", "eval") for p in (ROOT / pkg).rglob("*.py")]
    files += [ROOT / "cli.py", ROOT / "jobs.py"]
    found = []
    for path in files:
        mod, is_pkg = _module_of(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for t in names:
                if t.split(".")[0] in PACKAGES:
                    found.append(Import(mod, t, node.lineno))
    return found


IMPORTS = _imports()


def _package(mod: str) -> str:
    return mod.split(".")[0]


def _room(mod: str) -> str | None:
    for rooms in ROOM_LAYERS.values():
        for r in (*rooms, STANDALONE):
            if mod == r or mod.startswith(r + "."):
                return r
    return None


def _is_door(target: str) -> bool:
    if target in PACKAGES or target in DOOR_MODULES:
        return True
    return any(target in (*rooms, STANDALONE) for rooms in ROOM_LAYERS.values())


def _where(i: Import) -> str:
    return f"{i.importer} (line {i.line}) imports {i.target}"


def test_packages_import_only_downwards() -> None:
    bad = [_where(i) for i in IMPORTS if PACKAGES.index(_package(i.target)) > PACKAGES.index(_package(i.importer))]
    assert not bad, "imports upward:\n" + "\n".join(bad)


def test_other_packages_are_reached_through_their_front_doors() -> None:
    bad = [_where(i) for i in IMPORTS if _package(i.target) != _package(i.importer) and not _is_door(i.target)]
    assert not bad, "imports past a front door:\n" + "\n".join(bad)


def test_rooms_are_reached_through_their_front_doors() -> None:
    bad = []
    for i in IMPORTS:
        room = _room(i.target)
        if _package(i.target) == _package(i.importer) and room and _room(i.importer) != room and i.target != room:
            bad.append(_where(i))
    assert not bad, "imports into another room past its front door:\n" + "\n".join(bad)


def _level(mod: str) -> int:
    """A module's floor inside its package: base modules 0, rooms 1.., other top-level modules above."""
    pkg = _package(mod)
    rooms = ROOM_LAYERS.get(pkg, [])
    room = _room(mod)
    if room == STANDALONE:
        return 0
    if room is not None:
        return 1 + rooms.index(room)
    if mod in BASE.get(pkg, set()) or mod == pkg:
        return 0 if mod != pkg else len(rooms) + 1
    return len(rooms) + 1


def test_rooms_import_only_downwards() -> None:
    bad = []
    for i in IMPORTS:
        if _package(i.target) != _package(i.importer) or _room(i.importer) == _room(i.target) is not None:
            continue
        if i.importer == _package(i.importer):  # the package's own front door gathers everything
            continue
        if _level(i.target) >= _level(i.importer) and _room(i.target) != _room(i.importer):
            bad.append(f"{_where(i)} (floor {_level(i.importer)} to floor {_level(i.target)})")
    assert not bad, "imports from the same or a higher floor:\n" + "\n".join(bad)


def test_the_simulator_imports_nothing_of_the_client() -> None:
    bad = [
        _where(i)
        for i in IMPORTS
        if _room(i.importer) == STANDALONE and _package(i.target) != "traces" and _room(i.target) != STANDALONE
    ]
    assert not bad, "the simulator imports the client:\n" + "\n".join(bad)


@pytest.mark.parametrize("pkg", ["traces", "replay"])
def test_every_room_is_listed(pkg: str) -> None:
    """A new sub-package gets a floor here, so the contract covers it."""
    rooms = {str(p.parent.relative_to(ROOT)).replace("/", ".") for p in (ROOT / pkg).glob("*/__init__.py")}
    assert rooms == set(ROOM_LAYERS[pkg]) | ({STANDALONE} if pkg == "replay" else set())
