"""Is this shard folder the dataset that was built? Checks of a folder against its manifest.

The manifest records each shard file's size and sha256 and a content hash over every row (see
`canonical.content_line`). A rewritten Parquet file (text injected into a system prompt), a
swapped, truncated or corrupt file, or a manifest that points outside its folder must never be
replayed or pass as the official dataset, so:

- `check_manifest` (run by `Shards` on open) rejects a manifest whose shard list is empty,
  malformed, or names files outside the folder (absolute paths, `..`, links leading out);
- `verify_files` re-hashes every shard file against the manifest (fast: sizes first, then each
  file read once and hashed); `replay run` does it before the first request and records it in
  run.json;
- `verify_shards(content=True)` also recomputes the content hash from the rows, as the build
  computed it; `eval check` uses it instead of trusting the manifest.

A file that passed is then read from the very bytes that were hashed (`Shards.hold`): the rows
replayed (or content-hashed) are the rows checked, a file changed after its check is never read,
and no byte is read from disk twice (the footers and rows come from memory).

Every failure is a `ShardError` naming the file and saying how to get a good folder back.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..canonical import content_line, sha256_file
from ..errors import ShardError
from .layout import MANIFEST

if TYPE_CHECKING:
    from .manifest import Manifest
    from .reader import Shards

REBUILD = "rebuild it with `trajbench traces build` or restore the original shard folder"


@dataclass(frozen=True)
class Verification:
    """What a verification checked; it exists only when everything matched."""

    files: int
    bytes: int
    seconds: float
    content_hash: str | None = None  # recomputed from the rows, when asked for

    @property
    def method(self) -> str:
        return "sha256+content" if self.content_hash is not None else "sha256"

    def as_dict(self) -> dict[str, Any]:
        """The run.json form."""
        out: dict[str, Any] = {
            "verified": True,
            "method": self.method,
            "files": self.files,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }
        if self.content_hash is not None:
            out["content_hash"] = self.content_hash
        return out


def shard_path(folder: Path, name: Any, manifest_path: Path | None = None) -> Path:
    """The path of a shard file the manifest lists, which must be a plain file name that stays
    inside `folder` (also through links)."""
    where = manifest_path or folder / MANIFEST
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ShardError(
            f"{where}: shard file {name!r} is not a plain file name inside the shard folder (absolute, or with a folder part); {REBUILD}"
        )
    path = folder / name
    try:
        inside = path.resolve().parent == folder.resolve()
    except (OSError, RuntimeError):  # a link loop
        inside = False
    if not inside:
        raise ShardError(
            f"{path}: leads outside the shard folder (a link to {_link_target(path)}); shard files must be inside it: copy the real files in, or {REBUILD}"
        )
    return path


def _link_target(path: Path) -> str:
    try:
        return str(path.readlink())
    except OSError:
        return "?"


def check_manifest(folder: Path, manifest: Manifest, manifest_path: Path) -> None:
    """The manifest's shard list and paths, before anything is read through it (its fields and
    types were checked when it was read)."""

    def fail(what: str) -> ShardError:
        return ShardError(f"{manifest_path}: {what}; {REBUILD}")

    if not manifest.shards:
        raise fail("lists no shard files (`shards` is empty)")
    for entry in manifest.shards:
        path = shard_path(folder, entry.file, manifest_path)
        if not path.is_file():
            what = "is missing" if not path.exists() else "is not a regular file"
            raise ShardError(f"{path}: shard listed in {manifest_path.name} {what}; {REBUILD}")
    if not manifest.instances:
        raise fail("lists no trajectory instances")
    for k, e in enumerate(manifest.instances):
        if min(e.repeat, e.shard, e.group) < 0 or e.shard >= len(manifest.shards):
            raise fail(
                f"instances[{k}] must be [instance id, trajectory id, repeat, shard number < {len(manifest.shards)}, row group]"
            )


def verify_files(shards: Shards, *, hold: bool = True) -> Verification:
    """Every shard file against the manifest's size and sha256; raises `ShardError` at the first
    file that differs. Each file is read once: with `hold`, `shards` then reads it from the bytes
    hashed (memory: the shard files' size); without, it is hashed in blocks (memory: a block) for
    a caller that reads no row after the check."""
    start = time.monotonic()
    listed = shards.manifest.shards
    by_hash = {entry.sha256: entry.file for entry in listed}
    sizes = {entry.bytes for entry in listed}
    total = 0
    for entry in listed:
        path = shard_path(shards.path, entry.file)
        size = path.stat().st_size
        if size != entry.bytes and size not in sizes:  # the fast way to catch a cut
            raise ShardError(
                f"{path}: {size:,} bytes, the manifest says {entry.bytes:,}: the file was truncated or replaced after the build; {REBUILD}"
            )
        data = None
        if hold:
            with open(path, "rb") as fh:
                data = fh.read(size + 1)  # all of it (a file grown since the stat is a mismatch too)
            size = len(data)
            actual = hashlib.sha256(data).hexdigest()
        else:
            actual = sha256_file(path)
        if actual != entry.sha256:
            other = by_hash.get(actual)
            hint = (
                f"it holds the content of {other}: files swapped or renamed"
                if other
                else "the file was changed after the build"
            )
            raise ShardError(
                f"{path}: sha256 {actual[:16]}… does not match the manifest's {entry.sha256[:16]}… ({hint}); {REBUILD}"
            )
        if data is not None:
            shards.hold(entry.file, data)
        total += size
    return Verification(files=len(listed), bytes=total, seconds=time.monotonic() - start)


def content_hash_of(shards: Shards) -> str:
    """The content hash recomputed from the rows, exactly as the build computes it."""
    h = hashlib.sha256()
    for instance in shards:
        for row in instance.turns:
            h.update(content_line(row.as_dict()))
    return h.hexdigest()


def verify_shards(shards: Shards, *, content: bool = False, hold: bool = True) -> Verification:
    """`verify_files`, and with `content` the recomputed content hash against the manifest's
    (from the held bytes: the rows hashed are those of the files checked)."""
    files = verify_files(shards, hold=hold or content)
    if not content:
        return files
    start = time.monotonic()
    actual = content_hash_of(shards)
    if actual != shards.content_hash:
        raise ShardError(
            f"{shards.path}: the rows hash to {actual[:16]}…, the manifest says {shards.content_hash[:16]}…: "
            f"the shards were rewritten after the build; {REBUILD}"
        )
    return Verification(files.files, files.bytes, files.seconds + time.monotonic() - start, actual)
