"""Input formats: each module turns one kind of agent trace into validated `Trajectory` objects.

`FORMATS` is the registry (`--format` choices); every reader reports violations to a sink and
skips the bad conversation, so one pass lists every error of a file. `read_sources` reads every
trajectory of a list of inputs with the rules that span files; `build_trajectory` is the one
validation every format's rows go through (docs/dataset-format.md).
"""

from __future__ import annotations

from .mini_swe_agent import BASH_TOOL
from .mlperf_jsonl import row_to_flat
from .registry import FORMATS, Format
from .sources import read_sources, validate_sources
from .validate import FlatRow, build_trajectory

__all__ = [
    "BASH_TOOL",
    "FORMATS",
    "FlatRow",
    "Format",
    "build_trajectory",
    "read_sources",
    "row_to_flat",
    "validate_sources",
]
