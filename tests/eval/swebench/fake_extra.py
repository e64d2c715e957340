"""The optional extra `trajbench[swebench]` made present or absent for one test, whatever this
machine has installed, so no test's result depends on it.

Absent: `sys.modules[name] = None`, Python's documented way to make a module unimportable
(`import` raises ImportError, `importlib.util.find_spec` returns None). Present: an empty module
with a spec, enough for `eval.swebench.deps.require()`; a test that uses it must end before any
of the package's contents would be needed (a refused dataset, a missing Docker engine).
"""

from __future__ import annotations

import importlib.machinery
import sys
import types
from typing import Any

import pytest

EXTRA = ("minisweagent", "swebench")


def absent(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names or EXTRA:
        monkeypatch.setitem(sys.modules, name, None)


def present(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names or EXTRA:
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        monkeypatch.setitem(sys.modules, name, module)
    # what require() sets for the real packages, undone after the test
    for variable, value in (
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
        ("MSWEA_SILENT_STARTUP", "1"),
        ("MSWEA_COST_TRACKING", "ignore_errors"),
    ):
        monkeypatch.setenv(variable, value)


def unreachable_docker(monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    """A `docker` package (docker-py, a dependency of swebench) whose engine does not answer."""

    class DockerException(Exception):
        pass

    class Client:
        def ping(self) -> bool:
            raise DockerException(reason)

    def from_env(**_: Any) -> Client:
        return Client()

    module = types.ModuleType("docker")
    module.__spec__ = importlib.machinery.ModuleSpec("docker", None)
    module.from_env = from_env  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "docker", module)
