"""A point's two accuracy gates (`jobs.evaluate_point`): one reading of the run folder serves
both, their files are byte for byte what each gate writes alone, and a replay scores its point
off the event loop."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

import pytest
from evalruns import finish_run, write_run

import jobs
import traces
from eval import OSL_FILE, SCORES_FILE, open_run, osl_gate, score_run
from replay import RunConfig, read_records


@pytest.fixture
def run_dir(tmp_path: Path, sample_shards: Path) -> Path:
    return finish_run(write_run(tmp_path / "run", sample_shards, repeats=2, client_tokens=lambda r: 7))


def test_both_gates_read_the_records_and_shards_once(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    instances: list[int] = []
    real_read, real_instance = read_records, traces.Shards.instance

    def counted(path: Path) -> object:
        reads.append(path)
        return real_read(path)

    def counted_instance(self: traces.Shards, k: int) -> traces.Instance:
        instances.append(k)
        return real_instance(self, k)

    monkeypatch.setattr("eval.rundir.read_records", counted)
    monkeypatch.setattr(traces.Shards, "instance", counted_instance)
    verdict = jobs.evaluate_point(run_dir, "dataset")
    assert verdict.problems == [] and verdict.scores is not None and verdict.osl is not None
    assert reads == [run_dir]  # one reading of records.jsonl(.zst) for both gates
    assert sorted(instances) == sorted(set(instances))  # each ground-truth instance read once


def test_the_shared_reading_writes_what_each_gate_writes_alone(run_dir: Path, tmp_path: Path) -> None:
    alone = Path(shutil.copytree(run_dir, tmp_path / "alone"))
    score_run(alone, gates="dataset")
    osl_gate(alone, gates="dataset")
    jobs.evaluate_point(run_dir, "dataset")
    for name in (SCORES_FILE, OSL_FILE, "seal.json"):
        assert (run_dir / name).read_bytes() == (alone / name).read_bytes(), name
    # a Run opened once is what both functions take
    shared = open_run(run_dir)
    assert score_run(shared, gates="dataset", write=False) == score_run(alone, gates="dataset", write=False)
    assert osl_gate(shared, gates="dataset", write=False) == osl_gate(alone, gates="dataset", write=False)


def test_an_unreadable_folder_fails_both_gates_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    verdict = jobs.evaluate_point(tmp_path / "empty")
    assert verdict.scores is None and verdict.osl is None
    assert [p.split(":")[0] for p in verdict.problems] == ["inline score not computed", "OSL gate not computed"]
    assert verdict.problems[0].removeprefix("inline score not computed") == verdict.problems[1].removeprefix(
        "OSL gate not computed"
    )


def test_a_scored_run_scores_off_the_event_loop(
    sample_shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scored_run` is a coroutine: the scoring (seconds of CPU on a long run) runs in a thread,
    so nothing else on the loop waits for it."""
    from loopback_server import LoopbackServer

    threads: list[bool] = []
    real = jobs.evaluate_point

    def where(run_dir: Path, gates: str = "official", *, progress: str = "none") -> jobs.PointVerdict:
        threads.append(threading.current_thread() is threading.main_thread())
        return real(run_dir, gates, progress=progress)

    monkeypatch.setattr(jobs, "evaluate_point", where)
    with LoopbackServer() as srv:
        cfg = RunConfig(
            shards=str(sample_shards), endpoint=srv.base_url, out=str(tmp_path / "run"), inject_delays=False
        )
        result = asyncio.run(jobs.scored_run(cfg, "off"))
    assert threads == [False] and result.verdict is not None and result.verdict.problems == []
