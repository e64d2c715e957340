"""The front doors: every package (and room) exports exactly its public names, as a literal
list that ruff and mypy can read, and every exported name resolves (the lazy ones included).
Modelled on httpx's tests/test_exported_members.py."""

from __future__ import annotations

import ast
import importlib
import inspect
import types

import pytest

from traces.lazy import lazy_names

FRONT_DOORS = [
    "traces",
    "traces.analysis",
    "traces.cards",
    "traces.formats",
    "traces.inputs",
    "traces.lazy",
    "traces.png",
    "traces.profiles",
    "traces.requests",
    "traces.shards",
    "traces.synth",
    "traces.tokenizers",
    "replay",
    "replay.cacheobs",
    "replay.calibrate",
    "replay.client",
    "replay.engine",
    "replay.loop",
    "replay.report",
    "replay.results",
    "replay.sim",
    "eval",
    "eval.audits",
    "eval.submission",
    "eval.swebench",
    "eval.explore",
]
# names a module binds that are not its API: the __future__ feature and typing helpers
NOT_API = {
    "annotations",
    "TYPE_CHECKING",
    "Any",
    "Callable",
    "Iterable",
    "Mapping",
    "ModuleType",
    "Path",
    "import_module",
}


def _literal_all(module: types.ModuleType) -> list[str]:
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List), f"{module.__name__}.__all__ must be a list literal"
            names = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            assert len(names) == len(node.value.elts), f"{module.__name__}.__all__ must hold string literals only"
            return names
    raise AssertionError(f"{module.__name__} has no __all__")


def _own_submodule(value: object, package: str) -> bool:
    """A submodule the import system bound on its package (`traces.shards.build`), not an export."""
    return isinstance(value, types.ModuleType) and value.__name__.startswith(package + ".")


@pytest.mark.parametrize("name", FRONT_DOORS)
def test_exported_names_are_exactly_the_public_ones(name: str) -> None:
    module = importlib.import_module(name)
    exported = _literal_all(module)
    assert exported == module.__all__
    assert len(set(exported)) == len(exported), "a name is exported twice"
    bound = {
        k
        for k, v in vars(module).items()
        if not k.startswith("_")
        and not _own_submodule(v, name)
        and k not in NOT_API
        and not (k == "lazy_getattr" and name != "traces.lazy")  # the helper a lazy door binds
    }
    lazy = {lazy_names(n)[1] for names in getattr(module, "_LAZY", {}).values() for n in names}
    public = bound | lazy
    assert set(exported) - {"__version__"} == public - {"__version__"}, (
        f"{name}: exported but not public {sorted(set(exported) - public - {'__version__'})}, "
        f"public but not exported {sorted(public - set(exported))}"
    )


@pytest.mark.parametrize("name", FRONT_DOORS)
def test_every_exported_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    for member in module.__all__:
        assert getattr(module, member) is not None, f"{name}.{member}"


def test_the_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    import traces

    assert traces.__version__ == version("trajbench")
