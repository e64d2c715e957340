"""Reading Parquet and Arrow files as records, one small batch of rows at a time.

A table row is read as the JSON object a JSON-lines line would hold, so every format reads
tables the same way it reads lines (docs/dataset-format.md, "Inputs"): a Parquet file of the
official flat rows, or of `{messages, tools}` conversations for `--format openai-messages`.

Tables cannot tell a missing field from a null one (a column exists for every row), so nulls are
dropped, also inside nested structs: a row of the official layout without `tool_calls` has a null
there, not an empty list. Nested values whose schema varies from row to row (tool definitions,
messages) are often stored as JSON text in Hugging Face datasets; for the fields that must hold a
list or an object (`JSON_FIELDS`) such text is decoded. Dates and times become ISO 8601 strings.

Memory follows one batch of `BATCH_ROWS` rows: Parquet is read batch by batch across its row
groups, Arrow files are memory-mapped and read record batch by record batch. A position in an
error is the row's 1-based number in its file, across row groups and batches.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ErrorSink, TraceFormatError
from .sniff import Kind

#: Rows converted to Python objects at a time.
BATCH_ROWS = 64

#: Fields that hold a list or an object in every format; a JSON text in them is decoded.
JSON_FIELDS = frozenset(
    {
        "messages",
        "tools",
        "tool_calls",
        "tool_results",
        "intent_codes",
        "metadata",
        "info",
        "steps",
        "agent",
        "extra",
        "final_metrics",
    }
)

#: Columns of a trajbench shard file: a built shard given back as an input.
_SHARD_COLUMNS = frozenset({"instance_id", "delta_json", "prompt_sha256"})


def _plain(value: Any) -> Any:
    """A table value as a JSON value: nulls dropped from objects, dates as ISO 8601 text."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value  # validation names the field and its type
    return value


def record(row: dict[str, Any]) -> dict[str, Any]:
    """One table row as the record a JSON-lines line would hold (see the module's rules)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        if key in JSON_FIELDS and isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
            try:
                out[key] = orjson.loads(value)
                continue
            except orjson.JSONDecodeError:
                pass  # left as text: validation says what the field must hold
        out[key] = _plain(value)
    return out


def _batches(path: Path, kind: Kind, *, rows: bool = True) -> Iterator[pa.RecordBatch]:
    """The file's record batches (none when `rows` is False: the schema is checked only)."""
    if kind == "parquet":
        with pq.ParquetFile(path) as pf:
            _refuse_shard(path, pf.schema_arrow.names)
            if rows:
                yield from pf.iter_batches(batch_size=BATCH_ROWS, use_threads=False)
        return
    with pa.memory_map(str(path)) as source:
        if kind == "arrow-file":
            reader = pa.ipc.open_file(source)
            _refuse_shard(path, reader.schema.names)
            for i in range(reader.num_record_batches if rows else 0):
                yield reader.get_batch(i)
        else:
            stream = pa.ipc.open_stream(source)
            _refuse_shard(path, stream.schema.names)
            if rows:
                yield from stream


def _refuse_shard(path: Path, names: list[str]) -> None:
    if _SHARD_COLUMNS <= set(names):
        raise TraceFormatError(
            str(path),
            None,
            "a trajbench shard file, already built; pass its folder to replay, stats or show, "
            "or write it back out as trace data with `trajbench traces export FOLDER --out FILE.jsonl`",
        )


def check_table(path: str | os.PathLike[str], kind: Kind) -> None:
    """Open a table and read its schema (not its rows): raises `TraceFormatError` for one that
    cannot be read or that is a trajbench shard file, so that is said once, before reading."""
    p = Path(path)
    try:
        for _ in _batches(p, kind, rows=False):
            pass
    except (pa.ArrowException, OSError, ValueError) as exc:
        what = "Parquet" if kind == "parquet" else "Arrow"
        raise TraceFormatError(str(p), None, f"not a readable {what} file ({exc}); write the file again") from None


def iter_table_records(
    path: str | os.PathLike[str], kind: Kind, sink: ErrorSink
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based row number, record) of every row of a Parquet or Arrow file; a file that cannot
    be read (to its end) is reported to `sink` with the row it stopped at."""
    p = Path(path)
    n = 0
    what = "Parquet" if kind == "parquet" else "Arrow"
    try:
        for batch in _batches(p, kind):
            for start in range(0, batch.num_rows, BATCH_ROWS):
                for row in batch.slice(start, BATCH_ROWS).to_pylist():
                    n += 1
                    yield n, record(row)
    except TraceFormatError as exc:
        sink(exc)
    except (pa.ArrowException, OSError, ValueError) as exc:
        where = "" if n == 0 else f" after row {n:,}"
        sink(
            TraceFormatError(
                str(p), n + 1 if n else None, f"not a readable {what} file{where} ({exc}); write the file again"
            )
        )
