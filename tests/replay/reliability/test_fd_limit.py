"""A concurrency the open-file limit cannot hold: the soft limit is raised when the hard limit
allows, else the run is refused before it starts, with the fix. Child processes with lowered
limits (`resource.setrlimit` in `preexec_fn`) against a real loopback server."""

from __future__ import annotations

import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from loopback_server import LoopbackServer, Reply
from reliability_helpers import ROOT, cli_command, summary_of

from replay.loop.limits import FD_MARGIN, fds_needed
from replay.results.records import read_records

C = 160  # above the lowered soft limit below: every slot holds a socket at once


def _limited(soft: int, hard: int) -> Callable[[], None]:
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _run(args: list[str], soft: int, hard: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_command(args), cwd=ROOT, capture_output=True, text=True, timeout=180, preexec_fn=_limited(soft, hard)
    )


@pytest.fixture
def wide_shards(make_shards: Callable[..., Path]) -> Path:
    return make_shards({f"u{i:03d}": [0.0] for i in range(C)}, "wide")


def test_the_soft_limit_is_raised_to_what_the_concurrency_needs(wide_shards: Path, tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < fds_needed(C, 1):
        pytest.skip(f"this machine's hard open-file limit ({hard}) is below what the test needs")
    out = tmp_path / "run"
    # no turn is answered before every slot's has arrived: all C hold a connection at the same time
    with LoopbackServer(lambda body, headers: Reply(chunks=2, hold_until=lambda: srv.books.max_inflight >= C)) as srv:
        done = _run(
            [
                *("replay", "run", str(wide_shards), "--endpoint", srv.base_url, "-c", str(C), "--out", str(out)),
                *("--max-idle", "4"),  # the pre-opened sockets wait for 160 slots to start: keep them all
            ],
            soft=100,
            hard=hard,
        )
    assert done.returncode == 0, done.stderr
    # every turn answered (how many fall inside the performance window depends on how fast the
    # C slots send: the window closes at the first answer's last byte, docs/closed-loop.md)
    recs = list(read_records(out))
    assert len(recs) == C and all(r.ok for r in recs) and summary_of(out)["trajbench"]["errors_by_kind"] == {}
    assert srv.books.max_inflight > 100  # more sockets at once than the soft limit the run started with


def test_a_hard_limit_too_low_refuses_the_run_before_it_starts(wide_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with LoopbackServer() as srv:
        done = _run(
            ["replay", "run", str(wide_shards), "--endpoint", srv.base_url, "-c", str(C), "--out", str(out)],
            soft=100,
            hard=100,
        )
    need = C + FD_MARGIN
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"Error: --concurrency {C} needs about {need} open files per process (one socket per slot plus {FD_MARGIN}), but the hard "
        f"limit here is 100; raise it (as root: `ulimit -Hn {need}`, then `ulimit -n {need}` in the shell that runs trajbench; "
        f"for a service, LimitNOFILE={need}), or lower --concurrency"
    )
    assert not out.exists() and srv.books.requests == [] and srv.books.preflights == []


def test_the_refusal_suggests_workers_when_they_would_fit(wide_shards: Path, tmp_path: Path) -> None:
    done = _run(
        [
            "replay",
            "run",
            str(wide_shards),
            "--endpoint",
            "http://127.0.0.1:9",
            "-c",
            str(C),
            "--out",
            str(tmp_path / "run"),
        ],
        soft=200,
        hard=200,
    )
    assert (
        done.returncode == 1
        and "spread the slots over processes with --workers 3, or lower --concurrency" in done.stderr
    )
    assert fds_needed(C, 3) <= 200  # what it suggests does fit


def test_fds_needed() -> None:
    assert fds_needed(512, 1) == 512 + FD_MARGIN
    assert fds_needed(512, 4) == 128 + FD_MARGIN  # each worker holds its share of the sockets
    assert fds_needed(8, 8) == 16 + FD_MARGIN  # the parent holds two pipe ends per worker
