"""Front doors that load heavy modules on first use: one helper instead of a copy per package.

A package's `__init__` lists its lazily loaded names in `_LAZY` (submodule, relative to the
package → the names it gives), line for line beside a `TYPE_CHECKING` import of the same names
for mypy and readers, and binds `__getattr__ = lazy_getattr(__name__, _LAZY)`. A plain import of the package then costs only
its light modules: the simulator's child process and the worker processes start faster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `package` that imports a name's submodule on first use."""
    where = {name: module for module, names in table.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(import_module(where[name], package), name)
            setattr(import_module(package), name, value)  # the next access is a plain lookup
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__all__ = ["lazy_getattr"]
