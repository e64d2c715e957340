"""The tooling's configuration (pyproject.toml) agrees with the tree: mypy checks every shared test
helper by the name the tests import it by, from the same folders pytest puts on the path."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _config() -> dict[str, Any]:
    tool: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]
    return tool


def _helpers(folder: Path) -> set[str]:
    """The modules of a helper folder that are neither tests nor pytest's own files."""
    return {
        p.stem
        for p in folder.glob("*.py")
        if not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py")
    }


def test_mypy_searches_the_folders_pytest_puts_on_the_path() -> None:
    config = _config()
    assert config["mypy"]["mypy_path"] == config["pytest"]["ini_options"]["pythonpath"]


def test_mypy_checks_every_shared_helper_by_name() -> None:
    """A helper mypy only reaches through an import is treated as installed code, its errors kept
    quiet: each one must be in [tool.mypy] modules (and nothing else is, but the two top modules)."""
    config = _config()
    helpers: set[str] = set()
    for folder in config["pytest"]["ini_options"]["pythonpath"]:
        helpers |= _helpers(ROOT / folder)
    assert set(config["mypy"]["modules"]) == {"cli", "jobs", *helpers}
    assert config["mypy"]["packages"] == ["traces", "replay", "eval", "tests"]
