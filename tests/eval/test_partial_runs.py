"""`eval inline` (and `eval osl`) on a run that did not run every planned turn warns that it
scores a partial run: an interrupted replay (a real one, stopped with SIGINT), a crashed one,
one without result_summary.json, one with fewer records than planned."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from clirun import interrupt_when, trajbench
from evalruns import perfect, record, write_run

import traces
from eval.rundir import partial_run
from replay.results.summary import write_results

WARNING = "Warning: {run} is a partial run: "


def _finished(run: Path, **state: Any) -> Path:
    write_results(run, **state)
    return run


def test_a_complete_run_gets_no_warning(tmp_path: Path, sample_shards: Path) -> None:
    run = _finished(write_run(tmp_path / "r", sample_shards, answer=perfect))
    assert partial_run(run) is None
    done = trajbench("eval", "inline", str(run))
    assert done.code == 0 and "Warning" not in done.err


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ({"interrupted": True}, "it was interrupted (Ctrl-C or SIGTERM) and stopped issuing early"),
        ({"crashed": True}, "it crashed before it finished"),
        (None, "it has no performance/result_summary.json (it crashed, was killed, or is still running)"),
    ],
    ids=["interrupted", "crashed", "no-summary"],
)
@pytest.mark.slow
def test_runs_that_did_not_finish(tmp_path: Path, sample_shards: Path, state: dict[str, Any] | None, why: str) -> None:
    run = write_run(tmp_path / "r", sample_shards, answer=perfect)
    if state is not None:
        _finished(run, **state)
    assert (
        partial_run(run)
        == f"{run} is a partial run: {why}; its scores cover only the turns that ran (rerun it for a complete score)"
    )
    for command in ("inline", "osl"):
        done = trajbench("eval", command, str(run))
        assert done.err.startswith(WARNING.format(run=run) + why), done.err


def test_fewer_records_than_planned(tmp_path: Path, sample_shards: Path) -> None:
    shards = traces.Shards(sample_shards)
    rows = [row for inst in list(shards)[:2] for row in inst.turns]
    run = _finished(
        write_run(tmp_path / "r", sample_shards, records=[record(row, perfect(row), tokens=400) for row in rows])
    )
    planned = shards.manifest.counts.client_turns
    assert f"it records {len(rows)} of its {planned} planned turns" in (partial_run(run) or "")
    # a run meant to stop at the window's end is not partial for that
    cfg = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**cfg, "stop_at_window_end": True}))
    assert partial_run(run) is None


@pytest.mark.slow
def test_an_interrupted_replay_is_scored_with_a_warning(tmp_path: Path, sample_shards: Path) -> None:
    run = tmp_path / "run"
    records = run / "records.jsonl"
    done = interrupt_when(
        [
            "replay",
            "run",
            str(sample_shards),
            "--no-delays",
            "--out",
            str(run),
            "--sim-args",
            "--osl-mean 10 --osl-cv 0 --step-base-ms 25",
        ],
        lambda: records.is_file() and records.read_bytes().count(b"\n") >= 2,
        signal.SIGINT,
    )
    assert done.code == 130 and "Interrupted: issuing stopped early" in done.err
    scored = trajbench("eval", "inline", str(run))
    assert scored.err.startswith(WARNING.format(run=run) + "it was interrupted"), scored.err
    assert "Traceback" not in scored.err
