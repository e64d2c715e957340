"""The open-file limit a run needs, raised before the run or refused with the fix.

Every slot holds one socket, so a process serving C slots needs C descriptors plus the ones any
Python process keeps open (shard files, pipes, the event loop, the record file). With a soft
limit below that, connections fail with "Too many open files" partway through and the run
measures the client instead of the server. So before anything starts, the soft limit of
RLIMIT_NOFILE is raised as far as the run needs (an unprivileged process may raise it up to the
hard limit; worker processes inherit it); if the hard limit is too low, the run is refused with
the commands that fix it.
"""

from __future__ import annotations

import math

from ..errors import ReplayError

try:
    import resource

    HAVE_RESOURCE = True
except ImportError:  # not on Windows, where the limit is not the per-process soft limit of POSIX
    HAVE_RESOURCE = False

#: Descriptors a run's process uses besides its sockets: stdio, shard files, worker pipes, the
#: event loop, the record file, the simulator's pipes, the preflight's client. Generous on purpose.
FD_MARGIN = 128


def fds_needed(concurrency: int, workers: int) -> int:
    """Descriptors the busiest process of a run needs: its share of the slots plus the margin
    (with several workers, the parent holds only their pipes)."""
    per_worker = math.ceil(concurrency / workers)
    parent = 0 if workers == 1 else 2 * workers
    return max(per_worker, parent) + FD_MARGIN


def ensure_open_files(concurrency: int, workers: int = 1) -> int:
    """Raise the soft open-file limit to what the run needs; return the limit now in force.

    Raises `ReplayError` when the hard limit is below the need, before anything is started."""
    if not HAVE_RESOURCE:
        return -1
    needed = fds_needed(concurrency, workers)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        spread = math.ceil(concurrency / max(1, hard - FD_MARGIN)) if hard > FD_MARGIN else None
        via_workers = (
            f", spread the slots over processes with --workers {spread}" if spread and spread > workers else ""
        )
        raise ReplayError(
            f"--concurrency {concurrency} needs about {needed} open files per process (one socket per slot "
            f"plus {FD_MARGIN}), but the hard limit here is {hard}; raise it (as root: `ulimit -Hn {needed}`, "
            f"then `ulimit -n {needed}` in the shell that runs trajbench; for a service, LimitNOFILE={needed})"
            f"{via_workers}, or lower --concurrency"
        )
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    except (ValueError, OSError) as exc:
        raise ReplayError(
            f"--concurrency {concurrency} needs about {needed} open files per process, the soft limit is {soft} "
            f"and raising it failed ({exc}); run `ulimit -n {needed}` in the shell first"
        ) from None
    return needed
