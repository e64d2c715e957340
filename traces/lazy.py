"""Front doors that load heavy modules on first use: one helper instead of a copy per package.

A package's `__init__` lists its lazily loaded names in `_LAZY` (name → submodule, relative to
the package) beside a `TYPE_CHECKING` import of the same names for mypy and readers, and binds
`__getattr__ = lazy_getattr(__name__, _LAZY)`. A plain import of the package then costs only
its light modules: the simulator's child process and the worker processes start faster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `package` that imports `table[name]` on first use."""

    def __getattr__(name: str) -> Any:
        if name in table:
            value = getattr(import_module(table[name], package), name)
            setattr(import_module(package), name, value)  # the next access is a plain lookup
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__all__ = ["lazy_getattr"]
