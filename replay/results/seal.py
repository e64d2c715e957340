"""`seal.json`: what a run folder held when trajbench finished writing it (docs/files.md).

A run folder is judged by people who did not run it, so what it claims must not be taken on
trust: `replay run` seals the folder as its very last step (after the records are compressed and
the summary written), listing every file with its sha256, its size and the command (and
trajbench version) that wrote it. A command that later adds its own files to the folder
(`eval inline`, `eval osl`, `analyze cache`) amends the seal for those files only: the entries of
every other file stay as they were, so a folder whose seal was broken stays broken.

`verify_seal` names every file that is missing, extra or changed since. The seal is a record,
not a signature: someone who edits a file and recomputes its entry defeats it, which is why
`eval check` also recomputes every number it judges from the raw records (docs/compliance.md).
Files that are not results (the folder's lock file) are never sealed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import traces

from .layout import LOCK_FILE, SEAL_FILE

#: Files a seal never lists: itself, and the lock a writer holds (docs/files.md).
UNSEALED = frozenset({SEAL_FILE, LOCK_FILE})


@dataclass(frozen=True)
class SealedFile:
    """One file as it was sealed."""

    sha256: str
    size: int
    writer: str  # the command and trajbench version that wrote it, e.g. "replay run 0.1.0"


@dataclass(frozen=True)
class Seal(traces.JsonFile):
    """seal.json: the trajbench version that sealed the folder and every file by its path
    relative to the folder (with `/` between parts), sorted."""

    FILE = SEAL_FILE

    trajbench_version: str
    files: dict[str, SealedFile]


@dataclass(frozen=True)
class ChangedFile:
    """A sealed file whose bytes differ from the seal's entry."""

    name: str
    sealed_sha256: str
    sealed_size: int
    sha256: str
    size: int

    def describe(self) -> str:
        if self.size != self.sealed_size:
            return f"{self.name} changed ({self.size:,} bytes, sealed with {self.sealed_size:,})"
        return f"{self.name} changed (sha256 {self.sha256[:12]}…, sealed {self.sealed_sha256[:12]}…)"


@dataclass(frozen=True)
class SealCheck:
    """`verify_seal`'s verdict on a folder. `problem` says why there is no usable seal at all
    (none written: the run was killed or is still running; an unreadable file); otherwise the
    files missing from the folder, extra in it, and changed since they were sealed."""

    folder: str
    problem: str | None = None
    version: str | None = None
    files: int = 0
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    changed: tuple[ChangedFile, ...] = ()
    writers: tuple[str, ...] = ()

    @property
    def intact(self) -> bool:
        return self.problem is None and not (self.missing or self.extra or self.changed)

    def reason(self, limit: int = 6) -> str:
        """One line naming what is wrong (at most `limit` files of each kind), or what was sealed."""
        if self.problem is not None:
            return self.problem
        if self.intact:
            return f"{self.files} file(s) as sealed by trajbench {self.version} ({', '.join(self.writers)})"
        parts: list[str] = []
        for what, names in (
            ("changed since sealed", [c.describe() for c in self.changed]),
            ("missing", list(self.missing)),
            ("not sealed (extra)", list(self.extra)),
        ):
            if names:
                more = f" and {len(names) - limit} more" if len(names) > limit else ""
                parts.append(f"{what}: {', '.join(names[:limit])}{more}")
        return f"{Path(self.folder) / SEAL_FILE}: " + "; ".join(parts)


def writer_of(command: str) -> str:
    """The `writer` of a file written now by `command` (e.g. "replay run 0.1.0")."""
    return f"{command} {traces.__version__}"


def sealable_files(folder: str | os.PathLike[str]) -> list[str]:
    """Every file under `folder` a seal covers, as sorted relative paths with `/`."""
    root = Path(folder)
    return sorted(_walk(root, root))


def _walk(root: Path, here: Path) -> Iterator[str]:
    for entry in os.scandir(here):
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(root, path)
        elif entry.is_file() and not (here == root and entry.name in UNSEALED):
            yield path.relative_to(root).as_posix()


def _entry(folder: Path, name: str, writer: str) -> SealedFile:
    path = folder / name
    return SealedFile(traces.sha256_file(path), path.stat().st_size, writer)


def write_seal(folder: str | os.PathLike[str], command: str) -> Seal:
    """Seal every file now in `folder` as written by `command` (this trajbench's version)."""
    root = Path(folder)
    writer = writer_of(command)
    seal = Seal(traces.__version__, {name: _entry(root, name, writer) for name in sealable_files(root)})
    seal.write(root)
    return seal


def read_seal(folder: str | os.PathLike[str]) -> Seal | None:
    """The folder's seal, or None when there is none or it cannot be read."""
    if not Seal.exists(folder):
        return None
    try:
        return Seal.read(folder)
    except traces.ContractError:
        return None


def amend_seal(folder: str | os.PathLike[str], names: Iterable[str], command: str) -> Seal | None:
    """Add (or renew) the entries of the files `command` just wrote into a sealed folder; every
    other entry stays as it was, so a broken seal stays broken. Nothing is done (None) when the
    folder has no readable seal: a folder that was never sealed is not sealed after the fact."""
    root = Path(folder)
    seal = read_seal(root)
    if seal is None:
        return None
    writer = writer_of(command)
    files = dict(seal.files)
    for name in names:
        if (root / name).is_file():
            files[name] = _entry(root, name, writer)
        else:
            files.pop(name, None)
    amended = replace(seal, files=dict(sorted(files.items())))
    amended.write(root)
    return amended


def verify_seal(folder: str | os.PathLike[str]) -> SealCheck:
    """Compare `folder` with its seal: files missing, extra, or changed (size, then sha256)."""
    root = Path(folder)
    where = str(root)
    if not Seal.exists(root):
        return SealCheck(
            where,
            problem=f"{root / SEAL_FILE}: missing; the run never finished writing the folder (killed, or still "
            "running), or an older trajbench wrote it: rerun the point",
        )
    try:
        seal = Seal.read(root)
    except traces.ContractError as exc:
        return SealCheck(where, problem=f"{exc}; the seal is unreadable, so no file can be trusted: rerun the point")
    present = set(sealable_files(root))
    changed = []
    for name, entry in seal.files.items():
        if name not in present:
            continue
        path = root / name
        size = path.stat().st_size
        sha = entry.sha256 if size != entry.size else traces.sha256_file(path)
        if size != entry.size or sha != entry.sha256:
            changed.append(ChangedFile(name, entry.sha256, entry.size, "" if size != entry.size else sha, size))
    return SealCheck(
        where,
        version=seal.trajbench_version,
        files=len(seal.files),
        missing=tuple(sorted(set(seal.files) - present)),
        extra=tuple(sorted(present - set(seal.files))),
        changed=tuple(changed),
        writers=tuple(sorted({e.writer for e in seal.files.values()})),
    )
