"""Front doors that load heavy modules on first use: one helper instead of a copy per package.

A package's `__init__` lists its lazily loaded names in `_LAZY` (submodule, relative to the
package → the names it gives), line for line beside a `TYPE_CHECKING` import of the same names
for mypy and readers, and binds `__getattr__ = lazy_getattr(__name__, _LAZY)`. A plain import of the package then costs only
its light modules: the simulator's child process and the worker processes start faster. A name
given under another name is written as the import says it: `"summary_lines as inline_lines"`.

A lazy name may be its submodule's own name (`traces.profiles`, the function, from the submodule
`traces.profiles`; `eval.review`). Importing a submodule binds it on its package under that name,
which would hide the function from the package's `__getattr__`; the door's module class
(`LazyDoor`) refuses that one binding, so the name stays the function, as an eager
`from .profiles import profiles` left it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any


class LazyDoor(ModuleType):
    """The module class of a lazy front door (see the module's docstring)."""

    _lazy_names: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._lazy_names and isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return  # the import system binding the submodule over the lazy name of the same spelling
        super().__setattr__(name, value)


def lazy_getattr(package: str, table: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `package` that imports a name's submodule on first use;
    it makes `package`'s module a `LazyDoor` (called from the package's own `__init__`)."""
    where = {public: (module, own) for module, names in table.items() for own, public in map(lazy_names, names)}
    door = import_module(package)  # the package being initialised, from sys.modules
    door.__class__ = LazyDoor
    setattr(door, "_lazy_names", frozenset(where))  # noqa: B010 (a LazyDoor now; mypy knows it as a module)

    def __getattr__(name: str) -> Any:
        if name in where:
            module, own = where[name]
            value = getattr(import_module(module, package), own)
            setattr(import_module(package), name, value)  # the next access is a plain lookup
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def lazy_names(entry: str) -> tuple[str, str]:
    """(the module's own name, the name the package gives it) of a `_LAZY` entry."""
    own, _, public = entry.partition(" as ")
    return own, public or own


__all__ = ["LazyDoor", "lazy_getattr", "lazy_names"]
