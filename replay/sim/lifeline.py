"""Tie a simulator child's life to its launcher's, so no run leaves a server behind.

`start_simulator` runs the simulator as a child process. If the launcher dies without stopping
it (SIGKILL, a crash, an OOM kill), the child would be re-parented to init and keep its port
forever. Two independent lines make it stop, whichever way the parent ends:

1. Linux: `prctl(PR_SET_PDEATHSIG, SIGTERM)`, set first thing in the child: the kernel sends
   SIGTERM when the parent goes. (The kernel ties it to the launching *thread*: start the
   simulator from the thread that outlives it, as `replay run` does.)
2. Everywhere: a watcher thread waits for its stdin pipe (whose write end only the launcher
   holds) to close, and checks that the parent pid has not changed; either means the launcher
   is gone, and the child sends itself SIGTERM.

A SIGTERM starts aiohttp's graceful shutdown; `backstop` makes sure that shutdown cannot hang:
after `GRACE_S` the process exits regardless.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import signal
import sys
import threading
import time

GRACE_S = 5.0  # a graceful shutdown that takes longer than this is cut short
_PR_SET_PDEATHSIG = 1
_POLL_S = 0.5


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask the Linux kernel to send `sig` when the parent exits; False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        rc: int = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        return rc == 0
    except (OSError, AttributeError):
        return False


def arm(parent_pid: int) -> None:
    """Stop this process when `parent_pid` goes away (see the module docstring)."""
    set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the signal was set up
        _stop()
        return
    threading.Thread(target=_watch, args=(parent_pid,), name="sim-lifeline", daemon=True).start()


def _watch(parent_pid: int) -> None:
    fd = sys.stdin.fileno() if sys.stdin is not None else -1
    while True:
        if os.getppid() != parent_pid:
            break
        if fd >= 0:
            ready, _, _ = select.select([fd], [], [], _POLL_S)
            if ready and not os.read(fd, 4096):
                break  # EOF: the launcher closed its end, or died
        else:
            time.sleep(_POLL_S)
    _stop()


def _stop() -> None:
    backstop()
    os.kill(os.getpid(), signal.SIGTERM)


_armed = threading.Event()


def backstop(grace_s: float = GRACE_S) -> None:
    """Exit the process in `grace_s` seconds whatever else happens (idempotent)."""
    if _armed.is_set():
        return
    _armed.set()

    def later() -> None:
        time.sleep(grace_s)
        os._exit(0)

    threading.Thread(target=later, name="sim-backstop", daemon=True).start()
