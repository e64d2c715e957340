"""Shards: the built dataset (Parquet, one row per client turn, manifest.json with the content
hash). Building, reading, verifying against the manifest, showing a turn and exporting back to
trace formats (docs/files.md). Building and exporting load the trace formats on first use: a
replay only reads and verifies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr
from .layout import MANIFEST, STATS_FILE
from .manifest import FORMAT_VERSION, InstanceEntry, Manifest, TokenizerInfo
from .reader import COLUMNS, Instance, Shards, TurnPrompt, TurnRow, iter_prompts, logical_id, salt_for, without_marker
from .show import shards_profile, turn_body, uses_tokenizer
from .verify import Verification, verify_shards

if TYPE_CHECKING:
    from .build import BuildOptions, BuildResult, build_shards
    from .export import ExportResult, export_shards

__all__ = [
    "COLUMNS",
    "FORMAT_VERSION",
    "MANIFEST",
    "STATS_FILE",
    "BuildOptions",
    "BuildResult",
    "ExportResult",
    "Instance",
    "InstanceEntry",
    "Manifest",
    "Shards",
    "TokenizerInfo",
    "TurnPrompt",
    "TurnRow",
    "Verification",
    "build_shards",
    "export_shards",
    "iter_prompts",
    "logical_id",
    "salt_for",
    "shards_profile",
    "turn_body",
    "uses_tokenizer",
    "verify_shards",
    "without_marker",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".build": ("BuildOptions", "BuildResult", "build_shards"),
    ".export": ("ExportResult", "export_shards"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
