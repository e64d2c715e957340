"""The installed distribution's version, read from its metadata (one place, pyproject.toml)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("trajbench")
except PackageNotFoundError:  # a source tree used without installing it
    __version__ = "0+unknown"
