"""`replay sweep`: one run folder per point, a sweep manifest, resume keeps finished points,
the per-point hook runs, and a changed configuration is refused."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from loopback_server import LoopbackServer, Reply

from cli import cli
from replay.config import RunConfig
from replay.errors import ReplayError
from replay.results.records import records_path
from replay.sweep import parse_concurrencies, run_sweep


@pytest.mark.slow
def test_sweep_runs_each_point_then_resumes(sample_shards: Path, tmp_path: Path) -> None:
    scored: list[str] = []
    with LoopbackServer(lambda b, h: Reply(chunks=3)) as srv:
        base = RunConfig(shards=str(sample_shards), endpoint=srv.base_url, inject_delays=False, progress="none")
        folder = asyncio.run(
            run_sweep(
                base, [1, 2], tmp_path / "sweep", after_point=lambda d: scored.append(d.name), echo=lambda m: None
            )
        )
        first = len(srv.books.requests)
        plan = json.loads((folder / "sweep.json").read_text())
        assert [(p["concurrency"], p["dir"], p["status"]) for p in plan["points"]] == [
            (1, "c0001", "done"),
            (2, "c0002", "done"),
        ]
        assert scored == ["c0001", "c0002"] and first == 2 * 17
        for d in ("c0001", "c0002"):
            assert json.loads((folder / d / "run.json").read_text())["concurrency"] == int(d[1:])
        # an interrupted point (no result_summary.json) is rerun; finished ones are kept
        (folder / "c0002" / "performance" / "result_summary.json").unlink()
        said: list[str] = []
        asyncio.run(run_sweep(base, [1, 2], folder, after_point=lambda d: scored.append(d.name), echo=said.append))
        assert "C=1: kept (already done)" in said
        assert len(srv.books.requests) == first + 17 and scored[-1] == "c0002"
        with pytest.raises(ReplayError, match="other settings") as err:
            asyncio.run(
                run_sweep(
                    RunConfig(shards=str(sample_shards), endpoint=srv.base_url, progress="none"),
                    [1, 2],
                    folder,
                    echo=lambda m: None,
                )
            )
        # the one setting that differs, by the option that sets it, with both values
        assert "other settings: --no-delays (inject_delays false in the sweep, true here); give the sweep's" in str(
            err.value
        )


def test_a_point_is_scored_off_the_loop_which_keeps_serving(sample_shards: Path, tmp_path: Path) -> None:
    """`after_point` (the accuracy gates, seconds of CPU on a long run) runs in a thread: while it
    works, the sweep's event loop runs its callbacks (signals, timers). The hook asks the loop for
    a callback and waits for it; on the loop's own thread it would wait forever."""
    seen: list[tuple[str, bool]] = []

    async def sweep() -> Path:
        loop = asyncio.get_running_loop()

        def after_point(run_dir: Path) -> None:
            served = threading.Event()
            loop.call_soon_threadsafe(served.set)
            seen.append((run_dir.name, served.wait(timeout=60)))

        with LoopbackServer(lambda b, h: Reply(chunks=3)) as srv:
            base = RunConfig(shards=str(sample_shards), endpoint=srv.base_url, inject_delays=False, progress="none")
            return await run_sweep(base, [2], tmp_path / "sweep", after_point=after_point, echo=lambda m: None)

    folder = asyncio.run(sweep())
    assert seen == [("c0002", True)]
    assert json.loads((folder / "sweep.json").read_text())["points"][0]["status"] == "done"


def test_concurrency_lists_are_checked() -> None:
    assert parse_concurrencies("8,1, 2,2") == [1, 2, 8]
    for bad in ("", "0,1", "a,b", ",".join(str(c) for c in range(1, 40))):
        with pytest.raises(ReplayError):
            parse_concurrencies(bad)


def test_cli_needs_exactly_one_way_to_choose_points(sample_shards: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["replay", "sweep", str(sample_shards), "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "exactly one of --concurrency LIST or --regions" in res.output


@pytest.mark.slow
def test_add_runs_only_the_missing_points_and_keeps_the_rest(sample_shards: Path, tmp_path: Path) -> None:
    """Results are submitted incrementally: a baseline sweep, then more operating points."""
    with LoopbackServer(lambda b, h: Reply(chunks=3)) as srv:
        base = RunConfig(shards=str(sample_shards), endpoint=srv.base_url, inject_delays=False, progress="none")
        folder = asyncio.run(run_sweep(base, [1, 2], tmp_path / "sweep", echo=lambda m: None))
        baseline = {d: records_path(folder / d).stat().st_mtime_ns for d in ("c0001", "c0002")}
        first = len(srv.books.requests)
        # a list without --add that leaves points out is refused: it would drop them from sweep.json
        with pytest.raises(ReplayError, match=r"drop the finished or planned point\(s\) 1 from it.*missing 4$"):
            asyncio.run(run_sweep(base, [2, 4], folder, echo=lambda m: None))
        ran: list[str] = []
        said: list[str] = []
        asyncio.run(
            run_sweep(base, [2, 4, 8], folder, after_point=lambda d: ran.append(d.name), echo=said.append, add=True)
        )
        assert ran == ["c0004", "c0008"] and "C=2: kept (already done)" in said
        assert len(srv.books.requests) == first + 2 * 17  # two new points of 17 turns each
    plan = json.loads((folder / "sweep.json").read_text())
    assert plan["concurrencies"] == [1, 2, 4, 8]
    assert [(p["concurrency"], p["status"]) for p in plan["points"]] == [
        (1, "done"),
        (2, "done"),
        (4, "done"),
        (8, "done"),
    ]
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["c0001", "c0002", "c0004", "c0008"]
    for d, mtime in baseline.items():  # the baseline's runs are untouched
        assert records_path(folder / d).stat().st_mtime_ns == mtime


def test_add_needs_an_existing_sweep(sample_shards: Path, tmp_path: Path) -> None:
    base = RunConfig(shards=str(sample_shards), endpoint="http://127.0.0.1:9", progress="none")
    with pytest.raises(ReplayError, match=r"no sweep\.json there, so there is no sweep to add points to"):
        asyncio.run(run_sweep(base, [4], tmp_path / "new", echo=lambda m: None, add=True))
    assert not (tmp_path / "new").exists()


def test_cli_add_extends_a_sweep_by_its_missing_concurrencies(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    with LoopbackServer(lambda b, h: Reply(chunks=3)) as srv:
        args = ["replay", "sweep", str(sample_shards), "--endpoint", srv.base_url, "--no-delays", "--out", str(out)]
        first = CliRunner().invoke(cli, [*args, "-c", "1"], catch_exceptions=False)
        assert first.exit_code == 0, first.output
        added = CliRunner().invoke(cli, [*args, "-c", "1,2", "--add", "--gates", "off"], catch_exceptions=False)
        assert added.exit_code == 0, added.output
        assert len(srv.books.requests) == 2 * 17
    assert "C=1: kept (already done)" in added.output and "C=2: replaying" in added.output
    assert "C=1: judged again with --gates off" in added.output  # one sweep, one kind of gates
    plan = json.loads((out / "sweep.json").read_text())
    assert [(p["concurrency"], p["status"]) for p in plan["points"]] == [(1, "done"), (2, "done")]
    for d in ("c0001", "c0002"):
        assert json.loads((out / d / "scores.json").read_text())["gates"]["mode"] == "off"
