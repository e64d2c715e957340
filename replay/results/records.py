"""Per-turn records of a run: raw facts only, appended as turns finish (docs/files.md).

`records.jsonl` gets one line per finished turn, written and flushed at once, so a run killed
with SIGKILL keeps every finished turn and the file is readable while the run goes on. A torn
last line (the process died mid-write) is skipped by the reader. Derived numbers (TTFT, E2E,
TPOT, ITL) are functions of a record, never stored.

Every chunk's arrival is kept, packed (`pack_chunks`): decimal nanoseconds made a 400-token turn
~8 KB, mostly timestamps, over 200 MB per point of the full dataset. When the run ends the file
is compressed to `records.jsonl.zst` (`compress_records`, atomically: a crash leaves one complete
form). The reader takes both files and both line forms (docs/files.md).
"""

from __future__ import annotations

import base64
import json
import os
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from itertools import pairwise
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson
import zstandard

from ..errors import ReplayError
from .layout import RECORDS_FILE, RECORDS_ZST_FILE

#: Error kinds of a turn that *failed*, as the reference client fails one (docs/closed-loop.md):
#: no response, or none it would keep. `http`: a status other than 200; `connect`: no connection;
#: `reset`: the connection broke before the response head (never resent); `timeout`: the turn's
#: time ran out (the request was cancelled); `too_large`: the response broke a size cap;
#: `tool_call`: a tool-call delta the reference's merge cannot fold (arguments that are not a
#: string, a function that is not an object, indexes that cannot be told apart or ordered);
#: `aborted`: never sent, an earlier turn of the instance failed; `cancelled`: in flight when the
#: run was interrupted; `worker-lost`: the worker running it died (docs/ray.md). The rest of a
#: failed turn's trajectory instance is aborted.
FAILED_KINDS = (
    "http",
    "connect",
    "reset",
    "timeout",
    "too_large",
    "tool_call",
    "aborted",
    "cancelled",
    "worker-lost",
)
#: Error kinds of a *partial* turn: the 200 response started but is not a clean answer. The
#: reference completes such a turn with what arrived, so it keeps its output and its trajectory
#: goes on; trajbench's own keys count it apart from `ok`. `stream`: the stream broke after the
#: response head; `error_object`: an `{"error": …}` object came in the stream; `malformed`: a
#: line or chunk of a shape the parser does not expect (skipped, the rest folded); `unterminated`:
#: the body ended without `[DONE]` or a finish reason; `empty`: a complete stream that carried no
#: output and no finish reason (e.g. only `choices: []`).
PARTIAL_KINDS = ("stream", "error_object", "malformed", "unterminated", "empty")
#: Every error kind a record can carry.
ERROR_KINDS = FAILED_KINDS + PARTIAL_KINDS


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
    # The value of the run's --replica-header in the response (which replica served the turn);
    # written only when set, so records stay compact.
    replica: str | None = None

    # Characters of reasoning dropped from deltas that also carried content, as the reference
    # drops them (docs/metrics.md); written only when not 0, so records stay compact.
    dropped_reasoning_chars: int = 0

    @property
    def ok(self) -> bool:
        """A clean answer: no error of any kind."""
        return self.error_kind is None

    @property
    def failed(self) -> bool:
        """Failed as the reference fails a turn (`FAILED_KINDS`): no output it would keep."""
        return self.error_kind in FAILED_KINDS

    @property
    def partial(self) -> bool:
        """Completed with what arrived (`PARTIAL_KINDS`): the reference counts it as a success."""
        return self.error_kind in PARTIAL_KINDS

    def output_tokens(self) -> int | None:
        """The client tokenizer's count first (the reference's; a server cannot inflate it), else
        the server's usage when it can be true (docs/metrics.md)."""
        return self.client_output_tokens if self.client_output_tokens is not None else self.server_output_tokens()

    def server_output_tokens(self) -> int | None:
        """The server's `completion_tokens`, unless negative (no answer has fewer than 0 tokens;
        the cross-check of usage against the client's count is `replay.results.usage`)."""
        n = self.completion_tokens
        return None if n is None or n < 0 else n

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
    server = r.server_output_tokens()
    if server is None or r.first_chunk_chars is None or total <= 0:
        return None
    return server * (1 - min(r.first_chunk_chars, total) / total), "prorated"


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


#: Chunk times on disk are whole microseconds after the first chunk, whose time is exact (ns).
CHUNK_RESOLUTION_NS = 1000


#: Width of the stored gaps, narrowest first: struct codes, unsigned when no gap is negative.
_WIDTHS = ((b"B", 0, 0xFF), (b"H", 0, 0xFFFF), (b"I", 0, 0xFFFFFFFF), (b"b", -0x80, 0x7F), (b"h", -0x8000, 0x7FFF))
_DTYPES = {b"B": "<u1", b"H": "<u2", b"I": "<u4", b"Q": "<u8", b"b": "<i1", b"h": "<i2", b"i": "<i4", b"q": "<i8"}


def _array_code(size: int, signed: bool) -> str:
    """The `array` type code of integers `size` bytes wide (C's int sizes vary by platform)."""
    return next(t for t in ("bhilq" if signed else "BHILQ") if array(t).itemsize == size)


_ARRAY_CODES = {code: _array_code(np.dtype(d).itemsize, code.islower()) for code, d in _DTYPES.items()}


def pack_chunks(t_send_ns: int, chunk_ns: Sequence[int]) -> str:
    """Chunk arrival times as base64 of: one byte naming the width of the gaps (a `struct` code:
    B, H, I, Q unsigned, b, h, i, q signed), the first chunk's offset from the send in ns as a
    little-endian int64 (exact: TTFT's chunk keeps its time), then each gap between consecutive
    offsets from the first chunk, floored to whole µs, little-endian at that width. Flooring
    offsets, not gaps, keeps every time within 1 µs below the measured one with no drift; a
    paced engine's 5 ms gaps take 2 bytes each, not 20 digits. Plain Python into an `array`:
    it runs once a turn in the client's process, where numpy's per-call overhead on a few dozen
    numbers cost more than the loop (measured by `trajbench replay calibrate --shards`)."""
    if not len(chunk_ns):
        return ""
    first = chunk_ns[0]
    res = CHUNK_RESOLUTION_NS
    prev = 0
    gaps = []
    for t in chunk_ns[1:]:
        off = (t - first) // res
        gaps.append(off - prev)
        prev = off
    code = b"B"
    if gaps:
        lo, hi = min(gaps), max(gaps)
        code = next((c for c, a, b in _WIDTHS if a <= lo and hi <= b), b"i" if -(2**31) <= lo and hi < 2**31 else b"q")
    packed = array(_ARRAY_CODES[code], gaps)
    if sys.byteorder == "big":
        packed.byteswap()
    raw = code + (first - t_send_ns).to_bytes(8, "little", signed=True) + packed.tobytes()
    return base64.b64encode(raw).decode("ascii")


def unpack_chunks(t_send_ns: int, packed: str) -> tuple[int, ...]:
    """The times `pack_chunks` stored (the first exact, the rest to the µs); ValueError if torn."""
    if not packed:
        return ()
    raw = base64.b64decode(packed, validate=True)
    dtype = _DTYPES.get(raw[:1])
    if dtype is None or len(raw) < 9:
        raise ValueError("packed chunk times have no valid header")
    body = raw[9:]
    width = np.dtype(dtype).itemsize
    if len(body) % width:
        raise ValueError("packed chunk times end inside a number")
    first = t_send_ns + int.from_bytes(raw[1:9], "little", signed=True)
    offsets = np.cumsum(np.frombuffer(body, dtype=dtype).astype(np.int64)) * CHUNK_RESOLUTION_NS + first
    return (first, *offsets.tolist())


def record_line(r: Record) -> bytes:
    """One line of records.jsonl (no newline): the fields in order, `chunks` packed in place of
    `chunk_ns`. orjson, and no `asdict` deep copy: the writer runs once per turn in the client's
    process, and the standard library took ~0.35 ms a turn. A string orjson refuses (a lone
    surrogate in an error message) falls back to the standard encoder."""
    d = {name: getattr(r, name) for name in _FIELDS}
    del d["chunk_ns"]
    d["chunks"] = pack_chunks(r.t_send_ns, r.chunk_ns)
    if r.replica is None:
        del d["replica"]
    if not r.dropped_reasoning_chars:
        del d["dropped_reasoning_chars"]
    try:
        return orjson.dumps(d)
    except TypeError:  # ASCII with escapes: the reader's standard decoder takes it back
        return json.dumps(d, separators=(",", ":")).encode("ascii")


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)  # a lone surrogate, escaped (record_line), which orjson refuses


def record_from_dict(d: dict[str, Any]) -> Record:
    """Both line forms: `chunks` (packed, current) or `chunk_ns` (a list of ns, before 0.x)."""
    values = {k: d.get(k) for k in _FIELDS}
    packed = d.get("chunks")
    if isinstance(packed, str):
        values["chunk_ns"] = unpack_chunks(d["t_send_ns"], packed)
    else:
        values["chunk_ns"] = tuple(values["chunk_ns"] or ())
    values["tool_calls"] = tuple(values["tool_calls"] or ())
    values["dropped_reasoning_chars"] = values["dropped_reasoning_chars"] or 0
    return Record(**values)  # type: ignore[arg-type]


class RecordWriter:
    """Appends records to `records.jsonl`, one line each, flushed (and fsynced) per record."""

    def __init__(self, run_dir: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        self._fh: IO[bytes] = self.path.open("ab")
        self._fsync = fsync

    def write(self, r: Record) -> None:
        self._fh.write(record_line(r) + b"\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def records_path(run_dir: str | os.PathLike[str]) -> Path:
    """The run's records file: the compressed one once the run has ended, else the plain one
    (also when neither exists, for messages)."""
    zst = Path(run_dir) / RECORDS_ZST_FILE
    return zst if zst.is_file() else Path(run_dir) / RECORDS_FILE


_LEVEL = 3  # zstd's default: ~5x faster than 9 on records, within ~5 % of its size
_BLOCK = 1 << 20


def compress_records(run_dir: str | os.PathLike[str]) -> Path | None:
    """Replace `records.jsonl` with `records.jsonl.zst`, atomically: the compressed file is
    written beside it, synced, renamed into place, and only then is the plain file removed, so
    a crash at any point leaves a complete form (the reader prefers the compressed one). None
    when there is no plain file (already compressed, or nothing ran)."""
    plain = Path(run_dir) / RECORDS_FILE
    if not plain.is_file():
        return None
    final = Path(run_dir) / RECORDS_ZST_FILE
    tmp = final.with_name(final.name + ".tmp")
    cctx = zstandard.ZstdCompressor(level=_LEVEL)
    try:
        with plain.open("rb") as src, tmp.open("wb") as dst:
            cctx.copy_stream(src, dst, size=plain.stat().st_size, read_size=_BLOCK, write_size=_BLOCK)
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, final)
    except BaseException:  # a full disk, Ctrl-C: the plain file stays; no half-written copy beside it
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(final.parent)
    plain.unlink()
    return final


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not on every platform (Windows); the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _plain_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        yield from fh


def _zst_lines(path: Path) -> Iterator[bytes]:
    """Lines of a zstd file, streamed; a file that ends inside its frame is an error, not a
    shorter run (it was complete when it was written)."""
    dobj = zstandard.ZstdDecompressor().decompressobj()
    rest = b""
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            try:
                data = rest + dobj.decompress(block)
            except zstandard.ZstdError as exc:
                raise ReplayError(
                    f"{path}: not a zstd file, or a corrupt one ({exc}); check it with `zstd -t`"
                ) from None
            lines = data.split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield line + b"\n"
    if not dobj.eof:
        raise ReplayError(
            f"{path}: the zstd stream is truncated (the file ends inside a frame); the run's records are incomplete"
        )
    if rest:
        yield rest


def read_records(run_dir: str | os.PathLike[str]) -> Iterator[Record]:
    """Every complete record of a run (also while it is running); a torn last line is skipped.
    Reads `records.jsonl.zst` when the run has ended, `records.jsonl` before."""
    path = records_path(run_dir)
    if not path.is_file():
        raise ReplayError(f"{run_dir}: no {RECORDS_FILE}; pass a folder written by `trajbench replay run`")
    lines = _zst_lines(path) if path.name == RECORDS_ZST_FILE else _plain_lines(path)
    for k, line in enumerate(lines, start=1):
        if not line.endswith(b"\n"):
            break  # torn final write of a killed run
        try:
            yield record_from_dict(_loads(line))
        except (TypeError, KeyError, ValueError, AttributeError) as exc:  # JSONDecodeError is a ValueError
            raise ReplayError(f"{path}:{k}: unreadable record ({exc})") from None
