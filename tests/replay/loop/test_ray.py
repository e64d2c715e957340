"""`--backend ray` on a real two-node Ray cluster started here (docs/ray.md): the same requests as
`--backend process`, workers on both nodes, C requests in flight, and a killed actor that loses
only its in-flight turns. Each test skips when Ray is not installed (the extra `trajbench[ray]`)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback_server import LoopbackServer, Reply

import traces
from replay import ReplayError
from replay.config import RunConfig
from replay.results.records import read_records
from replay.results.runinfo import read_run_info
from replay.run import instance_turns, planned_turns, run_replay

pytestmark = [pytest.mark.ray, pytest.mark.slow]  # a two-node cluster: slow, run by .ci/run

ROOT = Path(__file__).resolve().parents[3]


def _ray_start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`ray start --block`: the node lives as long as this process (stopped by its id below)."""
    ray_bin = str(Path(sys.executable).with_name("ray"))
    with log.open("wb") as out:
        return subprocess.Popen(
            [ray_bin, "start", "--block", "--disable-usage-stats", "--num-cpus=1", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()  # `ray start --block` stops its node's processes
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: that node's processes, nothing else
            proc.wait(10)


@pytest.fixture(scope="module")
def ray() -> Any:
    """Ray itself; each test that needs it skips without it (the extra `trajbench[ray]`)."""
    return pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trajbench[ray]'")


@pytest.fixture(scope="module")
def ray_cluster(ray: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A head node and a second node joining it (one CPU each, dashboard and usage stats off),
    both importing this checkout; stopped afterwards even when a test fails. The nodes' logs are
    in the test's tmp folder; Ray's own folder is a short one of its own (its socket paths must
    fit in 107 bytes, which a test worker's tmp folder does not leave room for)."""
    tmp = tmp_path_factory.mktemp("ray")
    sockets = Path(tempfile.mkdtemp(prefix="tb-ray-"))
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    procs = [
        _ray_start(
            [
                "--head",
                "--port=0",
                "--include-dashboard=false",
                f"--temp-dir={sockets}",
                '--resources={"tb_head": 1}',
            ],
            tmp / "head.log",
            env,
        )
    ]
    try:
        address = None
        deadline = time.monotonic() + 60
        while address is None and time.monotonic() < deadline and procs[0].poll() is None:
            m = re.search(r"ray start --address='([^']+)'", (tmp / "head.log").read_text(errors="replace"))
            address = m.group(1) if m else None
            time.sleep(0.2)
        assert address, (tmp / "head.log").read_text(errors="replace")
        procs.append(_ray_start([f"--address={address}", '--resources={"tb_node": 1}'], tmp / "node.log", env))
        ray.init(address=address, namespace="trajbench", log_to_driver=False, logging_level="WARNING")
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, (tmp / "node.log").read_text(errors="replace")
            time.sleep(0.2)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(sockets, ignore_errors=True)


def _config(shards: Path, url: str, out: Path, **kw: Any) -> RunConfig:
    return RunConfig(shards=str(shards), endpoint=url, inject_delays=False, out=str(out), **kw)


def _bodies(srv: LoopbackServer, since: int) -> list[tuple[str, str]]:
    return sorted(
        (s.headers.get("X-Session-ID", ""), hashlib.sha256(s.raw).hexdigest()) for s in srv.books.requests[since:]
    )


def test_ray_sends_what_processes_send_from_both_nodes(ray_cluster: str, sample_shards: Path, tmp_path: Path) -> None:
    """C=4 over two workers, four instances, the run stopped at the window close: one quick
    instance closes the window while the three slow ones are in their first turn, so the
    in-window turns are the same whatever the timing."""
    quick = traces.Shards(sample_shards).instance(0).instance_id

    def plan(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        fast = headers.get("X-Session-ID") == quick
        return Reply(chunks=3, chunk_delay=0.02 if fast else 0.6)

    runs = {}
    with LoopbackServer(plan) as srv:
        for backend in ("process", "ray"):
            since = len(srv.books.requests)
            srv.books.max_inflight = 0
            kw: dict[str, Any] = {"ray_address": ray_cluster} if backend == "ray" else {}
            run_dir = asyncio.run(
                run_replay(
                    _config(
                        sample_shards,
                        srv.base_url,
                        tmp_path / backend,
                        concurrency=4,
                        workers=2,
                        num_trajectories=4,
                        stop_at_window_end=True,
                        backend=backend,
                        **kw,
                    )
                )
            )
            recs = list(read_records(run_dir))
            runs[backend] = (run_dir, recs, _bodies(srv, since), srv.books.max_inflight)
    (_, p_recs, p_bodies, p_peak), (ray_dir, r_recs, r_bodies, r_peak) = runs["process"], runs["ray"]
    assert r_bodies == p_bodies and len(r_bodies) == len(r_recs)  # the same bytes per (instance, turn)

    def turns(recs: list[Any]) -> list[tuple[str, int, str, bool, str | None]]:
        return sorted((r.instance_id, r.turn, r.prompt_sha256, r.in_window, r.error_kind) for r in recs)

    assert turns(r_recs) == turns(p_recs)
    in_window = Counter(r.instance_id for r in r_recs if r.in_window)
    assert in_window[quick] == sum(1 for r in r_recs if r.instance_id == quick) > 1
    assert sorted(n for i, n in in_window.items() if i != quick) == [1, 1, 1]
    assert r_peak == p_peak == 4  # C requests in flight at once
    info = read_run_info(ray_dir)
    assert info.backend == "ray" and info.ray is not None and info.ray.placement == "spread"
    nodes = {w.worker: w.node_id for w in info.ray.workers}
    assert len(set(nodes.values())) == 2  # spread over both nodes
    assert {nodes[r.worker] for r in r_recs} == set(nodes.values())  # and both sent requests
    for w in info.ray.workers:
        assert w.clock_checks >= 1 and w.clock_uncertainty_ns is not None and w.clock_offset_ns is not None
        assert abs(w.clock_offset_ns) <= w.clock_uncertainty_ns + 5_000_000  # one host: one clock
        assert w.lost is None


def test_a_resource_label_pins_the_workers(ray: Any, ray_cluster: str, sample_shards: Path, tmp_path: Path) -> None:
    with LoopbackServer(lambda b, h: Reply(chunks=2)) as srv:
        run_dir = asyncio.run(
            run_replay(
                _config(
                    sample_shards,
                    srv.base_url,
                    tmp_path / "pinned",
                    concurrency=2,
                    num_trajectories=2,
                    backend="ray",
                    ray_address=ray_cluster,
                    ray_resource="tb_node",
                )
            )
        )
    info = read_run_info(run_dir)
    assert info.ray is not None and info.ray.placement == "resource:tb_node"
    node = next(n for n in ray.nodes() if "tb_node" in n["Resources"])
    assert [w.node_id for w in info.ray.workers] == [node["NodeID"]]


async def _kill_worker_once_busy(ray: Any, srv: LoopbackServer, worker: int, after: int) -> None:
    while len(srv.books.requests) < after:
        await asyncio.sleep(0.02)
    names = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].endswith(f"-w{worker}")]
    assert len(names) == 1
    actor = ray.get_actor(names[0]["name"], namespace=names[0]["namespace"])
    ray.kill(actor, no_restart=True)


def test_a_killed_worker_loses_only_its_in_flight_turns(
    ray: Any, ray_cluster: str, sample_shards: Path, tmp_path: Path
) -> None:
    config = _config(
        sample_shards,
        "",
        tmp_path / "killed",
        concurrency=4,
        workers=2,
        num_trajectories=8,
        backend="ray",
        ray_address=ray_cluster,
    )

    async def main(url: str, srv: LoopbackServer) -> Path:
        from dataclasses import replace

        run = asyncio.create_task(run_replay(replace(config, endpoint=url)))
        await _kill_worker_once_busy(ray, srv, 1, after=6)
        return await run

    with LoopbackServer(lambda b, h: Reply(chunks=3, chunk_delay=0.05)) as srv:
        run_dir = asyncio.run(main(srv.base_url, srv))
    recs = list(read_records(run_dir))  # the record file is valid to its end
    kinds = Counter(r.error_kind for r in recs)
    lost = [r for r in recs if r.error_kind == "worker-lost"]
    assert lost and {r.worker for r in lost} == {1} and len({r.instance_id for r in lost}) <= 2  # one per slot
    # without delays nothing rules out that an unrecorded turn was sent and answered (its record
    # still in the dead actor's unsent batch): every one is worker-lost, none "not sent"
    assert set(kinds) <= {None, "worker-lost"}
    for instance in {r.instance_id for r in lost}:
        mine = sorted((x for x in recs if x.instance_id == instance), key=lambda x: x.turn)
        first = next(k for k, x in enumerate(mine) if not x.ok)
        assert all(x.ok for x in mine[:first]) and all(x.error_kind == "worker-lost" for x in mine[first:])
    # every turn of every instance is accounted for once: worker 0 ran the rest of the FIFO
    assert (
        len({(r.instance_id, r.turn) for r in recs})
        == len(recs)
        == planned_turns(instance_turns(traces.Shards(sample_shards)), 8)
    )
    assert sum(1 for r in recs if r.worker == 0 and r.ok) > 0
    info = read_run_info(run_dir)
    assert info.ray is not None and info.ray.workers[1].lost and info.ray.workers[0].lost is None
    # the re-checks during the run depend on how long it lasts: test_ray_driver.py counts them
    assert info.ray.workers[0].clock_checks >= 1 and info.ray.workers[0].clock_offset_range_ns is not None


def test_below_min_workers_the_run_stops_with_a_clear_error(
    ray: Any, ray_cluster: str, sample_shards: Path, tmp_path: Path
) -> None:
    config = _config(
        sample_shards,
        "",
        tmp_path / "stopped",
        concurrency=2,
        workers=2,
        num_trajectories=8,
        backend="ray",
        ray_address=ray_cluster,
        min_workers=2,
    )

    async def main(url: str, srv: LoopbackServer) -> Path:
        from dataclasses import replace

        run = asyncio.create_task(run_replay(replace(config, endpoint=url)))
        await _kill_worker_once_busy(ray, srv, 0, after=2)
        return await run

    with LoopbackServer(lambda b, h: Reply(chunks=3, chunk_delay=0.05)) as srv:
        with pytest.raises(ReplayError, match=r"1 of 2 workers left, below --min-workers 2"):
            asyncio.run(main(srv.base_url, srv))
    recs = list(read_records(tmp_path / "stopped"))
    assert {r.error_kind for r in recs} <= {None, "worker-lost", "aborted", "cancelled"}
