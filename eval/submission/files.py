"""The files of a tree by content: copying a run folder whole, and the table of every file's
sha256 and size that the manifest holds and the review recomputes (a missing, extra or changed
file is named)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import traces

from ..errors import EvalError


@dataclass(frozen=True)
class FileEntry:
    sha256: str
    size: int


def _walk(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise EvalError(f"{path}: a symbolic link; a submission holds plain files only (copy what it points to)")
        if path.is_file():
            yield path


def file_table(root: Path, *, skip: frozenset[str] = frozenset()) -> dict[str, FileEntry]:
    """Every file under `root` by its path relative to it (forward slashes), sorted; `skip`
    names top-level files to leave out."""
    out: dict[str, FileEntry] = {}
    for path in _walk(root):
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        out[rel] = FileEntry(traces.sha256_file(path), path.stat().st_size)
    return out


def folder_digest(table: Mapping[str, FileEntry], prefix: str) -> str:
    """One sha256 over the entries under `prefix/` (their paths relative to it): a run folder's
    identity, whatever tree it sits in."""
    h = hashlib.sha256()
    for rel in sorted(table):
        if rel.startswith(prefix + "/"):
            h.update(f"{rel[len(prefix) + 1 :]}\0{table[rel].sha256}\0{table[rel].size}\n".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class TableDiff:
    missing: list[str]
    extra: list[str]
    changed: list[str]

    @property
    def same(self) -> bool:
        return not (self.missing or self.extra or self.changed)


def compare_tables(recorded: Mapping[str, FileEntry], actual: Mapping[str, FileEntry]) -> TableDiff:
    return TableDiff(
        missing=sorted(set(recorded) - set(actual)),
        extra=sorted(set(actual) - set(recorded)),
        changed=sorted(k for k in set(recorded) & set(actual) if recorded[k] != actual[k]),
    )


def copy_folder(src: Path, dst: Path) -> None:
    """Copy a run or SWE-bench folder whole (file contents and times). Names starting with "."
    (a writer's temporary file, a lock) are not results and are left behind; a symbolic link is
    refused, so nothing from outside the folder slips in."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        for name in names:
            if (Path(folder) / name).is_symlink():
                raise EvalError(f"{Path(folder) / name}: a symbolic link; copy what it points to into the folder")
        return {n for n in names if n.startswith(".")}

    shutil.copytree(src, dst, ignore=ignore, symlinks=True)
