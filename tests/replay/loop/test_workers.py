"""`--workers W`: slots split across processes, one FIFO and window in the parent, one record file."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback_server import LoopbackServer, Reply

from replay import ReplayError
from replay.config import RunConfig, slots_of_worker
from replay.loop.coordinator import Coordinator
from replay.loop.scheduler import WorkerPlan
from replay.loop.workers import ProcessBackend
from replay.results.records import Record, read_records
from replay.run import run_replay

ROOT = Path(__file__).resolve().parents[3]


def test_slots_split_into_contiguous_blocks() -> None:
    assert [slots_of_worker(5, 2, w) for w in range(2)] == [(0, 1, 2), (3, 4)]
    assert [slots_of_worker(4, 4, w) for w in range(4)] == [(0,), (1,), (2,), (3,)]
    assert sorted(s for w in range(3) for s in slots_of_worker(10, 3, w)) == list(range(10))


@pytest.mark.slow
def test_workers_share_one_fifo_and_write_one_record_file(sample_shards: Path, tmp_path: Path) -> None:
    with LoopbackServer(lambda b, h: Reply(chunks=3, chunk_delay=0.005)) as srv:
        run_dir = asyncio.run(
            run_replay(
                RunConfig(
                    shards=str(sample_shards),
                    endpoint=srv.base_url,
                    concurrency=4,
                    workers=2,
                    num_trajectories=12,
                    inject_delays=False,
                    out=str(tmp_path / "run"),
                )
            )
        )
    records = list(read_records(run_dir))
    assert len(records) == 3 * 17 == len(srv.books.requests)  # every instance exactly once
    instances = {r.instance_id for r in records}
    assert len(instances) == 12 and "sim_002__repeat_3" in instances
    assert {(r.worker, r.slot) for r in records} <= {(0, 0), (0, 1), (1, 2), (1, 3)}
    assert {r.worker for r in records} == {0, 1}
    assert srv.books.session_overlaps == 0 and srv.books.max_inflight <= 4
    for instance in instances:  # an instance runs on one slot, turns in order
        mine = [r for r in records if r.instance_id == instance]
        assert len({r.slot for r in mine}) == 1
        assert [r.turn for r in mine] == sorted(r.turn for r in mine)


@pytest.mark.slow
def test_the_window_closes_at_the_workers_time_not_at_the_coordinators(sample_shards: Path) -> None:
    # the coordinator's clock runs an hour ahead: a close taken on it would be after every send
    hour = 3600 * 10**9
    coord = Coordinator(3, stop_at_window_end=False, clock=lambda: time.monotonic_ns() + hour)
    records: list[Record] = []
    with LoopbackServer(lambda b, h: Reply(chunks=2, chunk_delay=0.002)) as srv:
        plans = [
            WorkerPlan(
                worker=w,
                slots=(w,),
                shards=str(sample_shards),
                profile="kimi-k3",
                base_url=srv.base_url,
                inject_delays=False,
            )
            for w in range(2)
        ]
        asyncio.run(asyncio.wait_for(ProcessBackend(plans, coord, records.append).run(), 60))
    close = coord.window_close_ns
    assert close is not None and close < time.monotonic_ns()  # the finishing slot's own time
    first_done = min(r.t_last_ns for r in records if r.t_last_ns is not None)
    assert first_done <= close


def test_a_crashing_worker_fails_the_run_with_its_reason(tmp_path: Path) -> None:
    plan = WorkerPlan(
        worker=0, slots=(0,), shards=str(tmp_path / "missing"), profile="kimi-k3", base_url="http://127.0.0.1:9"
    )
    backend = ProcessBackend([plan], Coordinator(1, stop_at_window_end=False), lambda r: None)
    with pytest.raises(ReplayError, match=r"worker 0: ShardError: .*missing"):
        asyncio.run(asyncio.wait_for(backend.run(), 60))


@pytest.mark.slow
def test_one_broken_worker_stops_the_others_instead_of_hanging(sample_shards: Path, tmp_path: Path) -> None:
    with LoopbackServer(lambda b, h: Reply(chunks=5, chunk_delay=0.05)) as srv:
        good = WorkerPlan(
            worker=0,
            slots=(0,),
            shards=str(sample_shards),
            profile="kimi-k3",
            base_url=srv.base_url,
            inject_delays=False,
        )
        bad = WorkerPlan(
            worker=1, slots=(1,), shards=str(tmp_path / "missing"), profile="kimi-k3", base_url=srv.base_url
        )
        records: list[object] = []
        backend = ProcessBackend([good, bad], Coordinator(40, stop_at_window_end=False), records.append)
        with pytest.raises(ReplayError, match="worker 1: ShardError"):
            asyncio.run(asyncio.wait_for(backend.run(), 60))
    assert len(records) <= 1  # worker 0 never started, or was cancelled within its first turn


@pytest.mark.slow
def test_ctrl_c_reaches_every_worker_through_the_coordinator(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "interrupted"
    code = "import sys, cli; cli.main(sys.argv[1:])"
    # turns of 10 s: the signal lands mid-turn however slow the machine
    with LoopbackServer(lambda b, h: Reply(chunks=20, chunk_delay=0.5)) as srv:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                "replay",
                "run",
                str(sample_shards),
                "--endpoint",
                srv.base_url,
                "-c",
                "2",
                "--workers",
                "2",
                "--no-delays",
                "--drain-timeout",
                "0.3",
                "--out",
                str(out),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while len(srv.books.requests) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            # the terminal's Ctrl-C hits the whole process group, workers included
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err.decode()
    recs = list(read_records(out))
    assert sorted((r.worker, r.error_kind) for r in recs) == [(0, "cancelled"), (1, "cancelled")]
    assert len(srv.books.requests) == 2
