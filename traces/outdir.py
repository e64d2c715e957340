"""Output folders: creating them with a clear error, replacing one atomically, and the
temporary siblings an atomic build leaves when it is killed.

What `--overwrite` may replace is the owner's to say: a shard folder trajbench wrote that holds
none of the inputs, or an empty folder (`traces.shards.layout.check_replaceable`); a run folder
is one with `run.json`, a sweep folder one with `sweep.json` (`replay`).

A build writes into `.NAME.building-PID` and swaps an old folder out through `.NAME.old-PID`.
An exception or a signal the CLI turns into one removes them; a SIGKILL cannot, so the next
build next to it removes those whose process is gone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .errors import TraceError


def make_dir(path: Path, *, option: str = "--out", error: type[Exception] = TraceError) -> Path:
    """`mkdir -p path`, or `error` saying the place is not writable (read-only file system,
    /proc, permissions) instead of an OSError traceback."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable(path, exc, option=option, error=error) from None
    return path


def check_writable(path: Path, *, option: str = "--out", error: type[Exception] = TraceError) -> None:
    """Raise `error` unless `path` could be created (or written into) here, without creating it:
    a folder is made and removed again in the nearest existing ancestor, so a read-only place or
    a file in the way is found before a command contacts a server or computes anything."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(20, "not a folder", str(probe))
        os.rmdir(tempfile.mkdtemp(prefix=".trajbench-probe-", dir=probe))
    except OSError as exc:
        raise unwritable(path, exc, option=option, error=error) from None


def unwritable(path: Path, exc: OSError, *, option: str = "--out", error: type[Exception] = TraceError) -> Exception:
    """The error for a write into `path` that failed."""
    why = (
        "part of the path is a file, not a folder"
        if isinstance(exc, (FileExistsError, NotADirectoryError))
        else exc.strerror
    )
    return error(f"{option} {path}: cannot write here ({why}); choose a writable location for {option}")


def temp_sibling(out: Path, kind: str) -> Path:
    """`.NAME.KIND-PID` next to `out`: a build's work folder (`building`) or the folder it replaces (`old`)."""
    return out.parent / f".{out.name}.{kind}-{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def sweep_stale(out: Path) -> list[Path]:
    """Remove the temporary siblings of `out` left by builds whose process is gone."""
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(building|old)-(\d+)$")
    removed: list[Path] = []
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if (
            m
            and (int(m.group(2)) == os.getpid() or not _alive(int(m.group(2))))
            and entry.is_dir()
            and not entry.is_symlink()
        ):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def replace_dir(new: Path, out: Path) -> None:
    """Move the finished folder `new` to `out`, replacing what is there; if the swap is
    interrupted, the old folder is put back."""
    if not (out.exists() or out.is_symlink()):
        new.rename(out)
        return
    old = temp_sibling(out, "old")
    out.rename(old)
    try:
        new.rename(out)
    except BaseException:
        old.rename(out)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()
