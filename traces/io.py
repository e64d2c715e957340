"""Reading and writing dataset files, plain or zstd-compressed, line by line.

Readers stream: a file is never loaded whole, so memory follows the largest trajectory rather
than the dataset.
"""

from __future__ import annotations

import io
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

import zstandard

from .errors import TraceError

#: A single JSONL line above this is rejected: no real message is that large, and a runaway line
#: (a binary blob, a missing newline) would otherwise be parsed into memory whole.
MAX_LINE_BYTES = 16 * 1024 * 1024


def _open_binary(path: Path) -> IO[bytes]:
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a folder; pass the dataset file itself") from None
    if path.suffix == ".zst":
        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)  # type: ignore[return-value]
    return raw


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line bytes without the newline); blank lines skipped."""
    p = Path(path)
    with _open_binary(p) as fh:
        buffered = io.BufferedReader(fh, buffer_size=1 << 20) if p.suffix == ".zst" else fh  # type: ignore[arg-type]
        for lineno, raw in enumerate(buffered, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if raw.strip():
                yield lineno, raw


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A whole (small, single-document) file: plain or .zst."""
    p = Path(path)
    with _open_binary(p) as fh:
        return fh.read()


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
