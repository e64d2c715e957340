"""Per-turn records of a run: raw facts only, appended as turns finish (docs/files.md).

`records.jsonl` gets one line per finished turn, written and flushed at once, so a run killed
with SIGKILL keeps every finished turn and the file is readable while the run goes on. A torn
last line (the process died mid-write) is skipped by the reader. Derived numbers (TTFT, E2E,
TPOT, ITL) are functions of a record, never stored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from itertools import pairwise
from pathlib import Path
from typing import IO, Any

from .errors import ReplayError
from .layout import RECORDS_FILE

#: Error kinds a failed turn can carry. `reset`: the server dropped the connection after the
#: request was written (never resent); `too_large`: the response broke a size cap.
ERROR_KINDS = (
    "http",
    "stream",
    "error_object",
    "malformed",
    "timeout",
    "connect",
    "reset",
    "too_large",
    "aborted",
    "cancelled",
)


@dataclass(frozen=True)
class Record:
    """One issued turn: what was sent, when bytes arrived, what came back."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turn: int
    client_turn_index: int
    slot: int
    worker: int
    prompt_sha256: str
    salt_repeat: str
    salt_conversation: str
    t_send_ns: int
    t_first_ns: int | None
    t_last_ns: int | None
    chunk_ns: tuple[int, ...]
    delay_s: float
    in_window: bool
    content: str
    reasoning: str
    tool_calls: tuple[dict[str, Any], ...]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    client_prompt_tokens: int | None
    client_output_tokens: int | None
    http_status: int | None
    error_kind: str | None
    error_message: str | None
    # The first chunk (TTFT's) in characters of text and tool-call pieces, and the client
    # tokenizer's count of the output after it (TPOT's denominator; None without a tokenizer).
    first_chunk_chars: int | None = None
    client_tokens_after_first: int | None = None

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    def output_tokens(self) -> int | None:
        """Server usage first, the client tokenizer second (docs/metrics.md)."""
        return self.completion_tokens if self.completion_tokens is not None else self.client_output_tokens

    def output_chars(self) -> int:
        """Characters of the answer: content, reasoning and each tool call's name and arguments."""
        n = len(self.content) + len(self.reasoning)
        for call in self.tool_calls:
            fn = call.get("function") or {}
            n += len(fn.get("name") or "") + len(fn.get("arguments") or "")
        return n


_FIELDS = tuple(f.name for f in fields(Record))


def ttft_ns(r: Record) -> int | None:
    """First chunk − send (docs/metrics.md)."""
    return None if r.t_first_ns is None else r.t_first_ns - r.t_send_ns


def e2e_ns(r: Record) -> int | None:
    """Last byte − send."""
    return None if r.t_last_ns is None else r.t_last_ns - r.t_send_ns


def tokens_after_first(r: Record) -> tuple[float, str] | None:
    """Output tokens after the first chunk, and how they were counted (docs/metrics.md): the
    client tokenizer's exact count when the run had one ("client"), else the server's
    `completion_tokens` less the first chunk's share of the answer's characters ("prorated").
    The first chunk may carry several tokens (MTP, speculative decoding), so it is never taken
    as one token."""
    if r.client_tokens_after_first is not None:
        return float(r.client_tokens_after_first), "client"
    total = r.output_chars()
    if r.completion_tokens is None or r.first_chunk_chars is None or total <= 0:
        return None
    return r.completion_tokens * (1 - min(r.first_chunk_chars, total) / total), "prorated"


def tpot_ns(r: Record) -> float | None:
    """(E2E − TTFT) / output tokens after the first chunk; undefined when nothing followed it."""
    after = tokens_after_first(r)
    if r.t_first_ns is None or r.t_last_ns is None or after is None or after[0] <= 0:
        return None
    return (r.t_last_ns - r.t_first_ns) / after[0]


def itl_ns(r: Record) -> list[int]:
    """Gaps between consecutive streamed chunks."""
    ts = r.chunk_ns
    return [b - a for a, b in pairwise(ts)]


def record_to_json(r: Record) -> str:
    return json.dumps(asdict(r), ensure_ascii=False, separators=(",", ":"))


def record_from_dict(d: dict[str, Any]) -> Record:
    values = {k: d.get(k) for k in _FIELDS}
    values["chunk_ns"] = tuple(values["chunk_ns"] or ())
    values["tool_calls"] = tuple(values["tool_calls"] or ())
    return Record(**values)  # type: ignore[arg-type]


class RecordWriter:
    """Appends records to `records.jsonl`, one line each, flushed (and fsynced) per record."""

    def __init__(self, run_dir: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        self._fh: IO[str] = self.path.open("a", encoding="utf-8")
        self._fsync = fsync

    def write(self, r: Record) -> None:
        self._fh.write(record_to_json(r) + "\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_records(run_dir: str | os.PathLike[str]) -> Iterator[Record]:
    """Every complete record of a run (also while it is running); a torn last line is skipped."""
    path = Path(run_dir) / RECORDS_FILE
    if not path.is_file():
        raise ReplayError(f"{run_dir}: no {RECORDS_FILE}; pass a folder written by `trajbench replay run`")
    with path.open("r", encoding="utf-8") as fh:
        lines = fh.readlines()
    for k, line in enumerate(lines, start=1):
        if not line.endswith("\n"):
            break  # torn final write of a killed run
        try:
            yield record_from_dict(json.loads(line))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ReplayError(f"{path}:{k}: unreadable record ({exc})") from None
