"""Every record of one input file, whatever kind of file it is: JSON lines or table rows.

The formats read records, not bytes: a line of a JSON-lines file and a row of a Parquet or Arrow
file are the same JSON object to them (`traces.inputs.tabular` says how a row becomes one). The file's
kind comes from its first bytes (`traces.inputs.sniff`), not from its name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..errors import ErrorSink, TraceFormatError
from .io import iter_json_objects
from .sniff import TABULAR, sniff
from .tabular import iter_table_records


def iter_objects(path: str | os.PathLike[str], sink: ErrorSink) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, object) of a JSON-lines, Parquet or Arrow file; what cannot be read
    is reported to `sink` (file:line or file:row, the rule) and skipped."""
    try:
        kind = sniff(path)
    except TraceFormatError as exc:
        sink(exc)
        return
    if kind in TABULAR:
        yield from iter_table_records(path, kind, sink)
    else:
        yield from iter_json_objects(path, sink)


def is_table(path: str | os.PathLike[str]) -> bool:
    """Is `path` a Parquet or Arrow file (by its first bytes)?"""
    try:
        return sniff(path) in TABULAR
    except TraceFormatError:
        return False
