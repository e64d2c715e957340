"""Reading and writing dataset files, plain or zstd-compressed, line by line.

Readers stream with bounded memory: a line is read at most `MAX_LINE_BYTES` at a time (a longer
one is skipped to its newline and reported, never held whole), a `.zst` file is decompressed in
blocks, and a one-document file is read up to `MAX_DOCUMENT_BYTES`. So `/dev/zero`, a file
without newlines or a small zstd bomb cost megabytes, not gigabytes.

`.zst` files are decompressed with pyarrow's zstd stream, which (unlike `zstandard`'s stream
reader) reports a stream that ends mid-frame, so a truncated download is an error rather than a
silently shorter dataset. Writing still uses `zstandard`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson
import pyarrow as pa
import zstandard

from ..errors import TraceError, TraceFormatError

#: A single JSONL line above this is rejected: no real message is that large, and a runaway line
#: (a binary blob, a missing newline) would otherwise be parsed into memory whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: How far an over-long line is followed to find its end: past this the file is not text (a
#: device such as /dev/zero, a binary file, a decompression bomb) and reading stops.
MAX_SKIP_BYTES = 64 * MAX_LINE_BYTES
#: A one-document file (`.json`) above this is rejected: such files are parsed whole.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024

_BLOCK = 1 << 20

Sink = Callable[[TraceFormatError], None]


class _ArrowRaw(io.RawIOBase):
    """A pyarrow input stream as a raw binary file, so `io.BufferedReader` can sit on top."""

    def __init__(self, stream: pa.NativeFile, raw: IO[bytes]) -> None:
        self._stream = stream
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._stream.read(len(buffer))
        n = len(data)
        memoryview(buffer).cast("B")[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
            self._raw.close()
        super().close()


def _open_binary(path: Path) -> io.BufferedReader | IO[bytes]:
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a folder; pass the dataset file itself") from None
    except PermissionError:
        raise TraceError(f"{path}: permission denied; make the file readable") from None
    if path.suffix == ".zst":
        stream = pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")
        return io.BufferedReader(_ArrowRaw(stream, raw), buffer_size=_BLOCK)
    return raw


def _stream_error(path: Path, exc: BaseException) -> TraceFormatError:
    """The one-line error for a file that cannot be read to its end."""
    text = str(exc)
    if path.suffix == ".zst":
        if "Truncated" in text:
            rule = "the zstd stream is truncated (the file ends inside a frame); copy or compress it again"
        else:
            rule = f"not a zstd file, or a corrupt one ({text}); a .zst file must be zstd-compressed (check it with `zstd -t`)"
    else:
        rule = f"cannot be read ({text})"
    return TraceFormatError(str(path), None, rule)


def _report(error: TraceFormatError, sink: Sink | None) -> None:
    if sink is None:
        raise error
    sink(error)


def iter_lines(path: str | os.PathLike[str], sink: Sink | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line bytes without the newline); blank lines skipped.

    A line over `MAX_LINE_BYTES` is not yielded: it is reported (file:line, its length) and
    skipped to its newline, with at most one block in memory. A file that cannot be read on
    (a corrupt or truncated `.zst`, no newline within `MAX_SKIP_BYTES`) is reported and reading
    stops there. Reports go to `sink`, or are raised when there is none.
    """
    p = Path(path)
    with _open_binary(p) as fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline(MAX_LINE_BYTES + 1)
            except (OSError, pa.ArrowException) as exc:
                _report(_stream_error(p, exc), sink)
                return
            if not raw:
                return
            lineno += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                try:
                    size, ended = _skip_line(fh, len(raw))
                except (OSError, pa.ArrowException) as exc:
                    _report(_stream_error(p, exc), sink)
                    return
                if not ended and size > MAX_SKIP_BYTES:
                    _report(
                        TraceFormatError(
                            str(p),
                            lineno,
                            f"no newline in the first {MAX_SKIP_BYTES:,} bytes of this line; stopped reading the file (is it a binary file or a device?)",
                        ),
                        sink,
                    )
                    return
                _report(
                    TraceFormatError(
                        str(p),
                        lineno,
                        f"line is {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit of one row; split the message or check for a missing newline",
                    ),
                    sink,
                )
                continue
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if raw.strip():
                yield lineno, raw


def iter_json_objects(path: str | os.PathLike[str], sink: Sink | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) of a JSON-lines file, read with `iter_lines`' bounds. A line
    that is not UTF-8, not JSON or not an object is reported (file:line, the rule) and skipped;
    reports go to `sink`, or are raised when there is none."""
    where = str(path)
    for lineno, raw in iter_lines(path, sink):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            _report(
                TraceFormatError(where, lineno, f"invalid UTF-8 at byte {exc.start}; re-encode the file as UTF-8"), sink
            )
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            _report(TraceFormatError(where, lineno, f"not valid JSON ({exc}); each line must be one JSON object"), sink)
            continue
        if not isinstance(obj, dict):
            _report(TraceFormatError(where, lineno, f"each line must be a JSON object, got {type(obj).__name__}"), sink)
            continue
        yield lineno, obj


def _skip_line(fh: IO[bytes], seen: int) -> tuple[int, bool]:
    """Read past the rest of an over-long line, one block at a time: (its length without the
    newline, whether a newline ended it). Gives up past `MAX_SKIP_BYTES`."""
    size = seen
    while size <= MAX_SKIP_BYTES:
        block = fh.readline(_BLOCK)
        if not block:
            return size, True
        if block.endswith(b"\n"):
            return size + len(block) - 1, True
        size += len(block)
    return size, False


def read_head(path: str | os.PathLike[str], size: int = 4096) -> bytes:
    """The first `size` bytes of a file's content (decompressed for `.zst`), to tell what kind of
    file it is. A `.zst` stream that cannot be read gives what was read so far: reading the file
    properly reports it (`iter_lines`, `read_bytes`). A missing file raises `TraceError`."""
    p = Path(path)
    with _open_binary(p) as fh:
        try:
            return fh.read(size)
        except (OSError, pa.ArrowException):
            return b""


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A whole single-document file (plain or .zst), at most `MAX_DOCUMENT_BYTES`; a bigger or
    unreadable one raises `TraceFormatError`."""
    p = Path(path)
    out = bytearray()
    with _open_binary(p) as fh:
        try:
            while len(out) <= MAX_DOCUMENT_BYTES:
                block = fh.read(_BLOCK)
                if not block:
                    return bytes(out)
                out += block
        except (OSError, pa.ArrowException) as exc:
            out.clear()
            raise _stream_error(p, exc) from None
    out.clear()  # the error's traceback keeps this frame: its buffer goes now, not with the error
    raise TraceFormatError(
        str(p),
        None,
        f"the document is over {MAX_DOCUMENT_BYTES:,} bytes; write such data as JSON Lines (one record per line), which is read line by line",
    )


@contextmanager
def open_text_writer(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A text writer for `path`, zstd-compressed when it ends in `.zst`."""
    p = Path(path)
    with p.open("wb") as raw:
        if p.suffix == ".zst":
            with zstandard.ZstdCompressor(level=10).stream_writer(raw, closefd=False) as z:
                with io.TextIOWrapper(z, encoding="utf-8", newline="\n") as text:
                    yield text
        else:
            with io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as text:
                yield text


def write_json_lines(records: Iterable[Any], path: str | os.PathLike[str]) -> int:
    """One record per line, in the dataset's own key order (plain or `.zst` by the name);
    returns the number of records. Every format's writer is its records fed to this."""
    from ..canonical import source_json

    n = 0
    with open_text_writer(path) as out:
        for record in records:
            out.write(source_json(record))
            out.write("\n")
            n += 1
    return n
