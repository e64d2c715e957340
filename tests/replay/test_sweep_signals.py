"""A signal stops the whole sweep: the running point drains and is marked interrupted (never
done), no further point starts, the command exits 130 (SIGINT) or 143 (SIGTERM), and the same
command resumes by rerunning that point from the start. Real `trajbench replay sweep`
processes against the embedded simulator, slowed so that a point takes seconds."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from clirun import interrupt_when, trajbench
from loopback_server import LoopbackServer, Reply

from replay.config import RunConfig
from replay.errors import ReplayError
from replay.results.records import read_records
from replay.sweep import run_sweep

#: ~0.25 s per turn: 10 tokens at 25 ms a step, every answer the same length.
SLOW = "--osl-mean 10 --osl-cv 0 --step-base-ms 25"


def _sweep_args(shards: Path, out: Path) -> list[str]:
    return ["replay", "sweep", str(shards), "-c", "1,2", "--no-delays", "--out", str(out), "--sim-args", SLOW]


def _statuses(out: Path) -> list[tuple[str, str]]:
    return [(p["dir"], p["status"]) for p in json.loads((out / "sweep.json").read_text())["points"]]


def _records(run_dir: Path) -> int:
    path = run_dir / "records.jsonl"  # while the point runs; compressed once it has ended
    if (run_dir / "records.jsonl.zst").is_file():
        return sum(1 for _ in read_records(run_dir))
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _summary(run_dir: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run_dir / "performance" / "result_summary.json").read_text())
    return summary


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_a_signal_stops_the_sweep_and_marks_the_point_interrupted(
    sample_shards: Path, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    out = tmp_path / "sweep"
    done = interrupt_when(_sweep_args(sample_shards, out), lambda: _records(out / "c0001") >= 2, sig)
    assert done.code == code, done.err
    assert "Traceback" not in done.err
    assert (
        f"Interrupted: sweep {out} stopped by a signal: C=1 was interrupted and will be rerun; 2 point(s) still to run"
        in done.err
    )
    assert _statuses(out) == [("c0001", "interrupted"), ("c0002", "pending")]
    assert not (out / "c0002").exists()  # the next point never started
    summary = _summary(out / "c0001")
    assert summary["state"] == "interrupted" and summary["trajbench"]["interrupted"] is True
    assert 2 <= _records(out / "c0001") < 17  # drained: the turns in flight finished, nothing new was issued
    assert "C=2: replaying" not in done.out


@pytest.mark.slow
def test_a_resumed_sweep_reruns_the_interrupted_point(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    first = interrupt_when(_sweep_args(sample_shards, out), lambda: _records(out / "c0001") >= 2, signal.SIGINT)
    assert first.code == 130
    again = trajbench(*_sweep_args(sample_shards, out), timeout=180)
    assert again.code == 0, again.err
    assert "C=1: kept" not in again.out and "C=1: replaying" in again.out
    assert _statuses(out) == [("c0001", "done"), ("c0002", "done")]
    for d in ("c0001", "c0002"):
        assert _summary(out / d)["state"] == "complete" and _records(out / d) == 17


@pytest.mark.slow
def test_the_report_leaves_out_an_interrupted_point(sample_shards: Path, tmp_path: Path) -> None:
    from replay.report.points import run_dirs

    out = tmp_path / "sweep"
    done = interrupt_when(_sweep_args(sample_shards, out), lambda: _records(out / "c0001") >= 2, signal.SIGTERM)
    assert done.code == 143
    assert run_dirs(out) == []


def test_a_sweep_deletes_only_run_folders(sample_shards: Path, tmp_path: Path) -> None:
    with LoopbackServer(lambda b, h: Reply(chunks=2)) as srv:
        base = RunConfig(shards=str(sample_shards), endpoint=srv.base_url, inject_delays=False, progress="none")
        stranger = tmp_path / "stranger"
        stranger.mkdir()
        (stranger / "notes.txt").write_text("mine")
        with pytest.raises(
            ReplayError,
            match=re.escape("holds files but no sweep.json, so it is not a sweep to resume; choose a new --out"),
        ):
            asyncio.run(run_sweep(base, [1], stranger, echo=lambda m: None))
        assert (stranger / "notes.txt").read_text() == "mine"
        sweep = asyncio.run(run_sweep(base, [1], tmp_path / "sweep", echo=lambda m: None))
        (sweep / "c0002").mkdir()
        (sweep / "c0002" / "notes.txt").write_text("mine")
        with pytest.raises(ReplayError, match="c0002: in the way of this sweep's point but not a run folder"):
            asyncio.run(run_sweep(base, [1, 2], sweep, echo=lambda m: None))
        assert (sweep / "c0002" / "notes.txt").read_text() == "mine"
