"""What an input is before any format reads it: a path, a folder or `hf:org/name` resolved to
files (offline, from the local Hub cache), each file's kind from its first bytes, and its records
read with bounded memory (JSON lines, plain or zstd, or Parquet/Arrow rows).
"""

from __future__ import annotations

from .hubcache import PREFIX, is_hub_id, snapshot
from .io import iter_json_objects, iter_lines, open_text_writer, read_bytes, write_json_lines
from .records import is_table, iter_objects
from .resolve import expand_inputs, folder_kind, resolve_input
from .sniff import TABULAR, sniff
from .tabular import check_table

__all__ = [
    "PREFIX",
    "TABULAR",
    "check_table",
    "expand_inputs",
    "folder_kind",
    "is_hub_id",
    "is_table",
    "iter_json_objects",
    "iter_lines",
    "iter_objects",
    "open_text_writer",
    "read_bytes",
    "resolve_input",
    "snapshot",
    "sniff",
    "write_json_lines",
]
