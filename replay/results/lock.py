"""The lock of a run folder (and of a sweep folder) while a run writes it (docs/files.md).

Two runs writing one `--out` would merge their records into one folder that claims to be one
run, and `--overwrite` would delete files another run is still writing. So a run holds an OS
lock (`fcntl.flock`) on `.trajbench.lock` inside its folder from before it empties or writes the
folder until the folder is sealed; the file holds the holder's PID, so a refused run can name it.
The kernel releases a flock when its process dies, however it dies, so the file a killed run
leaves behind is no lock: the next run takes it over. The holder removes the file when it lets
go; a process that opened it just before is told by the inode check and opens the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import FolderInUse, ReplayError
from .layout import LOCK_FILE

_PROBE_RETRIES = 3


def lock_path(folder: str | os.PathLike[str]) -> Path:
    return Path(folder) / LOCK_FILE


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _in_use(folder: Path, what: str, pid: int | None) -> FolderInUse:
    holder = f"process {pid}" if pid is not None else "another process"
    return FolderInUse(
        f"{folder}: in use by {holder}, which is writing this {what} folder now ({LOCK_FILE}); wait for it to end "
        "or choose another --out (--overwrite never takes a folder in use)",
        pid,
    )


def _flock(fd: int) -> bool:
    """Take the lock without waiting for a holder; a few short retries absorb another process's
    `lock_holder` probe (it holds a shared lock for microseconds), never a holder's run."""
    for attempt in range(_PROBE_RETRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < _PROBE_RETRIES:
                time.sleep(0.01)
    return False


def _acquire(folder: Path, what: str) -> int:
    path = lock_path(folder)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ReplayError(f"{path}: cannot create the folder's lock file ({exc.strerror})") from None
        if not _flock(fd):
            pid = _pid_in(fd)
            os.close(fd)
            raise _in_use(folder, what, pid)
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed this file as it let go: lock the one there now
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str], what: str = "run") -> Iterator[None]:
    """Hold `folder`'s lock (the folder must exist), or raise `FolderInUse` naming the live
    process that holds it; `what` names the folder in that message ("run", "sweep")."""
    root = Path(folder)
    fd = _acquire(root, what)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path(root))  # before the release: a waiter then sees the inode change
        os.close(fd)


def lock_holder(folder: str | os.PathLike[str]) -> int | None:
    """The PID of the live process holding `folder`'s lock (0 when it holds it but its PID is
    unknown), or None when nobody does (no lock file, or one a dead process left)."""
    path = lock_path(folder)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _pid_in(fd)
        return 0 if pid is None else pid
    finally:
        os.close(fd)
    return None


def refuse_if_in_use(folder: str | os.PathLike[str], what: str = "run") -> None:
    """Raise `FolderInUse` when a live process holds `folder`'s lock (a check before the lock
    is taken, so a run is refused before it starts its endpoint)."""
    pid = lock_holder(folder)
    if pid is not None:
        raise _in_use(Path(folder), what, pid or None)
