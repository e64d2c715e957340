"""`replay sweep`: one run folder per point, a sweep manifest, resume keeps finished points,
the per-point hook runs, and a changed configuration is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from loopback_server import LoopbackServer, Reply

from cli import cli
from replay.config import RunConfig
from replay.errors import ReplayError
from replay.sweep import parse_concurrencies, run_sweep


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
        (folder / "c0002" / "result_summary.json").unlink()
        said: list[str] = []
        asyncio.run(run_sweep(base, [1, 2], folder, after_point=lambda d: scored.append(d.name), echo=said.append))
        assert "C=1: kept (already done)" in said
        assert len(srv.books.requests) == first + 17 and scored[-1] == "c0002"
        with pytest.raises(ReplayError, match="other settings"):
            asyncio.run(
                run_sweep(
                    RunConfig(shards=str(sample_shards), endpoint=srv.base_url, progress="none"),
                    [1, 2],
                    folder,
                    echo=lambda m: None,
                )
            )


def test_concurrency_lists_are_checked() -> None:
    assert parse_concurrencies("8,1, 2,2") == [1, 2, 8]
    for bad in ("", "0,1", "a,b", ",".join(str(c) for c in range(1, 40))):
        with pytest.raises(ReplayError):
            parse_concurrencies(bad)


def test_cli_needs_exactly_one_way_to_choose_points(sample_shards: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["replay", "sweep", str(sample_shards), "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "exactly one of --concurrency LIST or --regions" in res.output
