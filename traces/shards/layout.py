"""The file names of a shard folder and of its statistics, spelled here and nowhere else, and
what makes a folder a shard folder (the only kind `traces build --overwrite` replaces)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import TraceError

MANIFEST = "manifest.json"
STATS_FILE = "stats.json"


def shard_file(name: str, k: int, total: int) -> str:
    """The k-th of `total` shard files of dataset `name`: `<name>-0000k-of-0000N.parquet`."""
    return f"{name}-{k:05d}-of-{total:05d}.parquet"


def is_shard_folder(path: Path) -> bool:
    """A folder `trajbench traces build` wrote: its manifest names trajbench as the writer."""
    try:
        manifest = json.loads((path / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(manifest, dict)
        and str(manifest.get("generated_by", "")).startswith("trajbench ")
        and "format_version" in manifest
    )


def _inside(child: Path, folder: Path) -> bool:
    try:
        return child.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return True  # cannot tell: assume the worst


def check_replaceable(out: Path, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Raise unless `--overwrite` may delete `out`: an empty folder, or a shard folder, and in
    either case not one that holds (or is) an input."""
    if not out.is_dir():
        raise TraceError(
            f"--out {out}: is a file, not a shard folder; --overwrite replaces only a folder `trajbench traces build` wrote, so choose another --out"
        )
    for src in inputs:
        if _inside(Path(src), out):
            raise TraceError(
                f"--out {out}: holds the input {src}; --overwrite would delete it, so choose an --out outside the inputs' folders"
            )
    if any(out.iterdir()) and not is_shard_folder(out):
        raise TraceError(
            f"--out {out}: not a shard folder (no {MANIFEST} written by trajbench); --overwrite replaces only a folder "
            "`trajbench traces build` wrote, so choose another --out (or empty this one yourself)"
        )
