"""What kind of file an input is, from its first bytes rather than its name.

A Parquet file handed to a JSON-lines reader used to be reported as "invalid UTF-8 at byte 4",
which says nothing useful. Looking at the magic bytes first lets trajbench read the tables it
can read (Parquet, Arrow IPC as written by Hugging Face `datasets`) and name the binary files it
cannot (gzip, zip, UTF-16 text, …) together with what to do about them (docs/dataset-format.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from ..errors import TraceFormatError
from .io import read_head

Kind = Literal["text", "parquet", "arrow-file", "arrow-stream"]

#: The kinds read as tables of records (`traces.inputs.tabular`); "text" is JSON Lines or JSON.
TABULAR: tuple[Kind, ...] = ("parquet", "arrow-file", "arrow-stream")

_DOCS = "docs/dataset-format.md"
_READS = f"trajbench reads JSON Lines, JSON, Parquet and Arrow files: {_DOCS}"

#: (magic bytes at offset 0, what the file is, what to do) of binary files trajbench does not read.
_FOREIGN: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "a gzip-compressed file", "decompress it (gunzip) or recompress it with zstd as .zst"),
    (b"BZh", "a bzip2-compressed file", "decompress it (bunzip2) or recompress it with zstd as .zst"),
    (b"\xfd7zXZ\x00", "an xz-compressed file", "decompress it (unxz) or recompress it with zstd as .zst"),
    (b"PK\x03\x04", "a zip archive", "unzip it and pass the files (or the folder) inside"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "unpack it and pass the files (or the folder) inside"),
    (b"SQLite format 3\x00", "an SQLite database", "export its rows as JSON Lines or Parquet"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file", "export its rows as JSON Lines or Parquet"),
    (b"\x93NUMPY", "a NumPy array file", "export its rows as JSON Lines or Parquet"),
    (b"\xff\xfe", "UTF-16 text", "re-encode it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text", "re-encode it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)"),
)
_ZSTD = b"\x28\xb5\x2f\xfd"
_BZIP2 = re.compile(rb"^BZh[1-9]1AY&SY")


def _is_zst(path: Path) -> bool:
    return path.suffix.lower() == ".zst"


def sniff(path: str | os.PathLike[str]) -> Kind:
    """The kind of `path`'s content (of its decompressed content for `.zst`).

    Raises `TraceFormatError` (the file, what it is, what to do) for a binary file that is none
    of the kinds, and `TraceError` for a file that cannot be opened."""
    p = Path(path)
    head = read_head(p)
    if head.startswith(b"PAR1"):
        if _is_zst(p):
            raise TraceFormatError(
                str(p),
                None,
                "a zstd-compressed Parquet file; decompress it (zstd -d): Parquet compresses its own columns",
            )
        return "parquet"
    if head.startswith(b"ARROW1"):
        return "arrow-file"
    if head.startswith(b"\xff\xff\xff\xff"):  # the IPC stream's continuation marker (Hugging Face .arrow files)
        return "arrow-stream"
    if head.startswith(_ZSTD) and not _is_zst(p):
        raise TraceFormatError(
            str(p), None, "a zstd-compressed file whose name does not end in .zst; rename it to end in .zst"
        )
    for magic, what, fix in _FOREIGN:
        if head.startswith(magic) and (magic != b"BZh" or _BZIP2.match(head)):
            raise TraceFormatError(str(p), None, f"{what}, not trace data; {fix} ({_READS})")
    if len(head) > 262 and head[257:262] == b"ustar":
        raise TraceFormatError(
            str(p), None, f"a tar archive, not trace data; unpack it and pass the files inside ({_READS})"
        )
    if b"\x00" in head:
        raise TraceFormatError(str(p), None, f"a binary file (it holds NUL bytes), not trace data; {_READS}")
    return "text"
