"""`run_replay` and `trajbench replay run` end to end against real loopback servers: the scripted
server of `loopback.py` (which keeps books of what it saw) and the embedded simulator."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from loopback_server import LoopbackServer, Reply, session_of, write_traces

import traces
from replay import ReplayError
from replay.config import RunConfig
from replay.results import LOCK_FILE, SEAL_FILE, read_seal, verify_seal
from replay.results.records import Record, read_records
from replay.results.runinfo import read_run_info
from replay.run import run_replay
from traces.shards.show import turn_body

ROOT = Path(__file__).resolve().parents[2]


def crafted_shards(tmp_path: Path, trajectories: dict[str, list[float]]) -> Path:
    src = write_traces(tmp_path / "crafted.jsonl", trajectories)
    out = tmp_path / "crafted"
    traces.build_shards([str(src)], out, traces.BuildOptions(name="crafted"))
    return out


def run(shards: Path, out: Path, base_url: str | None, **kw: Any) -> Path:
    return asyncio.run(run_replay(RunConfig(shards=str(shards), endpoint=base_url, out=str(out), **kw)))


def summary_of(run_dir: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run_dir / "performance" / "result_summary.json").read_text())
    return summary


def ended(r: Record) -> int:
    """When a turn's last byte came (every turn of these runs ended)."""
    assert r.t_last_ns is not None, r
    return r.t_last_ns


def test_each_request_body_is_what_traces_show_prints(sample_shards: Path, tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        run_dir = run(
            sample_shards,
            tmp_path / "run",
            srv.base_url,
            concurrency=2,
            num_trajectories=6,
            inject_delays=False,
            profile="qwen3.6-35b-a3b",
        )
    records = list(read_records(run_dir))
    assert len(srv.books.requests) == len(records) == 17 + 10  # one pass + the two coding repeats
    rep2 = tmp_path / "rep2"  # a second pass, materialised by the build, to compare re-salted turns with
    traces.build_shards(
        [str(ROOT / "traces" / "data" / "sample.jsonl")], rep2, traces.BuildOptions(name="rep2", repeats=2)
    )
    where = {r.prompt_sha256: r for r in records}
    profile = traces.get_profile("qwen3.6-35b-a3b")
    for seen in srv.books.requests:
        r = where[traces.messages_sha256(seen.body["messages"])]
        assert seen.body == turn_body(str(rep2), r.trajectory_id, r.repeat, r.turn, profile)
        assert session_of(seen.headers) == r.instance_id
    assert {r.repeat for r in records} == {1, 2}
    cfg = read_run_info(run_dir)
    assert cfg.target == "real" and cfg.profile == "qwen3.6-35b-a3b" and cfg.request_params == profile.request_params()
    assert cfg.dataset.content_hash == traces.Shards(sample_shards).content_hash
    s = summary_of(run_dir)
    for key in (
        "n_samples_issued",
        "n_samples_completed",
        "n_samples_failed",
        "duration_ns",
        "ttft",
        "tpot",
        "latency",
        "input_sequence_lengths",
        "output_sequence_lengths",
        "qps",
        "tps",
        "finish_reason_counts",
        "run_config",
    ):
        assert key in s
    ours = s["trajbench"]
    for key in ("interactivity", "itl", "cached_tokens", "per_trajectory", "errors_by_kind", "window", "turns"):
        assert key in ours
    assert (
        ours["turns"]["ok"] == 27
        and s["finish_reason_counts"]["stop"] == s["n_samples_completed"] == ours["turns"]["window"]["ok"]
    )
    assert "system throughput" in (run_dir / "report.txt").read_text()


def test_closed_loop_never_exceeds_one_request_per_slot_or_c_overall(sample_shards: Path, tmp_path: Path) -> None:
    with LoopbackServer(lambda b, h: Reply(chunks=3, chunk_delay=0.005)) as srv:
        run_dir = run(
            sample_shards, tmp_path / "run", srv.base_url, concurrency=3, num_trajectories=8, inject_delays=False
        )
    records = list(read_records(run_dir))
    assert srv.books.session_overlaps == 0
    assert 1 < srv.books.max_inflight <= 3
    assert {r.slot for r in records} == {0, 1, 2}
    for slot in range(3):
        spans = sorted((r.t_send_ns, ended(r)) for r in records if r.slot == slot)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans)), (
            f"slot {slot} overlapped itself"
        )


def test_delays_are_waited_holding_the_slot_and_excluded_from_latency(tmp_path: Path) -> None:
    shards = crafted_shards(tmp_path, {"d1": [0.0, 0.5, 0.4]})
    with LoopbackServer() as srv:
        run_dir = run(shards, tmp_path / "run", srv.base_url, concurrency=1)
    recs = list(read_records(run_dir))
    assert [r.delay_s for r in recs] == [0.0, 0.5, 0.4]
    for prev, nxt in itertools.pairwise(recs):
        # waited before sending, so outside the turn's E2E (which starts at the send)
        assert nxt.t_send_ns - ended(prev) >= nxt.delay_s * 1e9
    arrivals = [s.t_arrive_ns for s in srv.books.requests]
    assert arrivals[1] - arrivals[0] >= 0.5e9 and arrivals[2] - arrivals[1] >= 0.4e9
    with LoopbackServer() as srv:
        run_dir = run(shards, tmp_path / "nodelay", srv.base_url, inject_delays=False)
    assert [r.delay_s for r in read_records(run_dir)] == [0.0, 0.0, 0.0]


WINDOW_SET = {"long": [0.0, 0.8, 0.8, 0.8], "short1": [0.0], "short2": [0.0]}


def _window_reply(body: dict[str, Any], headers: dict[str, str]) -> Reply:
    # the short users take 0.15 s per turn, so the window closes ~0.3 s in, well before the long
    # user's second turn (after its 0.8 s delay) and well after its first.
    return Reply(chunks=3, chunk_delay=0.05 if session_of(headers).startswith("short") else 0.0)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.slow
def test_window_closes_when_a_finished_slot_finds_the_fifo_empty(tmp_path: Path, workers: int) -> None:
    shards = crafted_shards(tmp_path, WINDOW_SET)
    with LoopbackServer(_window_reply) as srv:
        run_dir = run(shards, tmp_path / "run", srv.base_url, concurrency=2, workers=workers)
    recs = {(r.instance_id, r.turn): r for r in read_records(run_dir)}
    flags = {k: r.in_window for k, r in recs.items()}
    assert flags == {
        ("long", 1): True,
        ("short1", 1): True,
        ("short2", 1): True,
        ("long", 3): False,
        ("long", 5): False,
        ("long", 7): False,
    }
    s = summary_of(run_dir)
    ours = s["trajbench"]
    assert (
        ours["window"]["closed"]
        and s["n_samples_issued"] == ours["turns"]["window"]["sent"] == 3
        and ours["turns"]["sent"] == 6
    )
    start = min(r.t_send_ns for r in recs.values())
    end = max(ended(r) for k, r in recs.items() if flags[k])
    assert s["duration_ns"] == ours["window"]["duration_ns"] == end - start
    # no tokenizer: the reference's token keys stay empty; trajbench's own keep the server's usage
    assert s["output_sequence_lengths"] == {} and s["tps"] is None
    assert ours["output_sequence_lengths"]["total"] == 9  # 3 window turns × 3 tokens; the tail is out
    assert recs[("long", 3)].t_send_ns >= ours["window"]["close_ns"] > recs[("short2", 1)].t_send_ns


def test_stop_at_window_end_issues_nothing_after_the_close(tmp_path: Path) -> None:
    shards = crafted_shards(tmp_path, WINDOW_SET)
    with LoopbackServer(_window_reply) as srv:
        run_dir = run(shards, tmp_path / "run", srv.base_url, concurrency=2, stop_at_window_end=True)
    assert sorted((r.instance_id, r.turn) for r in read_records(run_dir)) == [("long", 1), ("short1", 1), ("short2", 1)]
    assert len(srv.books.requests) == 3
    assert read_run_info(run_dir).stop_issuing_on_first_user_complete is True


def test_http_failure_is_recorded_and_aborts_the_instance(sample_shards: Path, tmp_path: Path) -> None:
    def plan(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        return Reply(status=503) if session_of(headers) == "sim_001" and len(body["messages"]) > 2 else Reply()

    with LoopbackServer(plan) as srv:
        run_dir = run(sample_shards, tmp_path / "run", srv.base_url, inject_delays=False)
    sim1 = [(r.turn, r.error_kind, r.http_status) for r in read_records(run_dir) if r.instance_id == "sim_001"]
    assert sim1 == [(1, None, 200), (3, "http", 503), (5, "aborted", None), (7, "aborted", None)]
    assert sum(1 for s in srv.books.requests if session_of(s.headers) == "sim_001") == 2
    s = summary_of(run_dir)
    ours = s["trajbench"]
    assert (ours["turns"]["failed"], ours["turns"]["aborted"], ours["errors_by_kind"]) == (
        1,
        2,
        {"aborted": 2, "http": 1},
    )
    assert ours["turns"]["ok"] == 17 - 3 and ours["latency"]["n"] == ours["turns"]["window"]["ok"]  # failures stay out
    # the reference's meanings: the aborted turns were issued, the failed one completed with an error
    assert (s["n_samples_issued"], s["n_samples_completed"], s["n_samples_failed"]) == (17, 17, 3)


def test_turn_timeout_cancels_the_request_on_the_server(tmp_path: Path) -> None:
    shards = crafted_shards(tmp_path, {"hung": [0.0, 0.0], "fine": [0.0]})
    # a stall far past the timeout, and a timeout far past a loopback answer's time
    with LoopbackServer(lambda b, h: Reply(stall=60.0) if session_of(h) == "hung" else Reply()) as srv:
        run_dir = run(shards, tmp_path / "run", srv.base_url, turn_timeout=2.0)
        deadline = time.monotonic() + 30  # a wait, not a bound: it ends when the server sees the close
        while srv.books.disconnected < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    recs = list(read_records(run_dir))
    assert [(r.instance_id, r.error_kind) for r in recs] == [("hung", "timeout"), ("hung", "aborted"), ("fine", None)]
    assert srv.books.disconnected == 1 and srv.books.completed == 1  # the server saw the client go


def test_client_tokenizer_counts_output_when_the_server_sends_no_usage(tmp_path: Path) -> None:
    shards = crafted_shards(tmp_path, {"u1": [0.0, 0.0]})
    with LoopbackServer(lambda b, h: Reply(chunks=3, usage=b["messages"][-1]["content"].endswith("1"))) as srv:
        run_dir = run(shards, tmp_path / "run", srv.base_url, tokenizer="qwen3.6", profile="qwen3.6-35b-a3b")
    first, second = read_records(run_dir)
    assert (first.completion_tokens, second.completion_tokens) == (None, 3)
    assert first.client_output_tokens is not None and first.output_tokens() == first.client_output_tokens > 0
    assert first.client_tokens_after_first is not None and first.first_chunk_chars is not None
    tokens = summary_of(run_dir)["trajbench"]["tokens"]
    assert (tokens["output_from_server"], tokens["output_from_client"]) == (0, 2)  # the client's count first
    assert tokens["output_client_minus_server"]["n"] == 1  # both counts exist for the second turn


def test_refuses_to_reuse_a_non_empty_folder(sample_shards: Path, tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ReplayError, match="not empty"):
        run(sample_shards, tmp_path / "busy", "http://127.0.0.1:9", num_trajectories=1)
    with pytest.raises(ReplayError, match="not a run folder"):
        asyncio.run(
            run_replay(
                RunConfig(
                    shards=str(sample_shards), endpoint="http://127.0.0.1:9", out=str(tmp_path / "busy"), overwrite=True
                )
            )
        )
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_a_run_seals_its_folder_and_lets_go_of_its_lock(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILE).write_text("999999\n")  # what a SIGKILLed run leaves: no lock, and no content
    with LoopbackServer() as srv:
        run(sample_shards, out, srv.base_url, num_trajectories=1, inject_delays=False)
    seal = read_seal(out)
    assert seal is not None and verify_seal(out).intact
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name != SEAL_FILE)
    assert sorted(seal.files) == written
    assert {"run.json", "records.jsonl.zst", "performance/result_summary.json", "report.txt"} <= set(seal.files)
    assert not (out / LOCK_FILE).exists()


def _cli(args: list[str], **kw: Any) -> subprocess.Popen[bytes]:
    code = "import sys, cli; sys.argv[0] = 'trajbench'; cli.main(sys.argv[1:])"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw
    )


def _wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def _lines(run_dir: Path) -> int:
    path = run_dir / "records.jsonl"
    return path.read_bytes().count(b"\n") if path.is_file() else 0


@pytest.mark.slow
def test_sigkill_mid_run_leaves_every_finished_turn_readable(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    with LoopbackServer(lambda b, h: Reply(chunks=4, chunk_delay=0.03)) as srv:
        proc = _cli(
            [
                "replay",
                "run",
                str(sample_shards),
                "--endpoint",
                srv.base_url,
                "-c",
                "2",
                "--trajectories",
                "40",
                "--no-delays",
                "--out",
                str(out),
            ]
        )
        try:
            assert proc.stderr is not None
            assert _wait_for(lambda: _lines(out) >= 6, 60), (
                proc.stderr.read().decode() if proc.poll() is not None else "no records"
            )
        finally:
            proc.kill()
            proc.communicate(timeout=10)
        completed_at_server = srv.books.completed
    records = list(read_records(out))
    assert len(records) >= 6 and all(r.ok for r in records)
    assert len(records) == _lines(out)  # no torn line, every line a record
    assert completed_at_server - len(records) <= 2  # only turns in flight (at most C) are lost
    assert not (out / "performance" / "result_summary.json").exists()


@pytest.mark.slow
def test_ctrl_c_stops_issuing_cancels_after_the_drain_time_and_keeps_results(
    sample_shards: Path, tmp_path: Path
) -> None:
    out = tmp_path / "interrupted"
    # turns of 10 s: the signal lands mid-turn however slow the machine
    with LoopbackServer(lambda b, h: Reply(chunks=20, chunk_delay=0.5)) as srv:
        proc = _cli(
            [
                "replay",
                "run",
                str(sample_shards),
                "--endpoint",
                srv.base_url,
                "-c",
                "2",
                "--no-delays",
                "--drain-timeout",
                "0.3",
                "--out",
                str(out),
            ]
        )
        try:
            assert _wait_for(lambda: len(srv.books.requests) >= 2, 60)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err.decode()
    recs = list(read_records(out))
    assert len(recs) == 2 and {r.error_kind for r in recs} == {"cancelled"}  # 10 s turns, 0.3 s drain
    s = summary_of(out)
    assert (
        s["state"] == "interrupted"
        and s["trajbench"]["interrupted"] is True
        and s["trajbench"]["errors_by_kind"] == {"cancelled": 2}
    )
    assert (s["n_samples_issued"], s["n_samples_completed"]) == (2, 0)  # cancelled in flight: issued, never completed
    assert len(srv.books.requests) == 2  # nothing issued after Ctrl-C


@pytest.mark.slow
def test_cli_without_endpoint_replays_against_the_embedded_simulator(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "sim"
    proc = _cli(
        [
            "replay",
            "run",
            str(sample_shards),
            "-c",
            "2",
            "--no-delays",
            "--out",
            str(out),
            "--sim-args",
            "--osl-mean 8 --step-base-ms 0 --prefill-ms-per-token 0 --batch-ms-per-seq 0",
        ]
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    assert "system throughput" in stdout.decode() and f"run folder: {out}" in stdout.decode()
    cfg = read_run_info(out)
    assert cfg.target == "simulated" and cfg.endpoint.startswith("http://127.0.0.1:")
    recs = list(read_records(out))
    assert len(recs) == 17 and all(r.ok and r.completion_tokens for r in recs)


def test_replay_against_the_simulator_fixture(sim_server: str, sample_shards: Path, tmp_path: Path) -> None:
    run_dir = run(sample_shards, tmp_path / "run", sim_server, concurrency=4, inject_delays=False, turn_timeout=30)
    s = summary_of(run_dir)
    ours = s["trajbench"]
    assert ours["turns"]["ok"] == 17 and ours["throughput"]["output_tokens_per_s"] > 0
    assert ours["interactivity"]["e2e_interactivity"] > 0 and s["tps"] is None  # no tokenizer: as the reference
    assert s["n_samples_completed"] == ours["turns"]["window"]["ok"]  # the reference's counts are the tracked turns
    assert ours["interactivity"]["output_tokens_sum"] == ours["output_sequence_lengths"]["total"]
    assert ours["cached_tokens"]["turns_reporting"] > 0
    assert os.path.getsize(run_dir / "report.txt") > 0


def test_a_run_reads_the_shard_footers_once_and_plans_every_cycled_turn(
    sample_shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every footer is a file read: the per-instance turn counts are read once and give both the
    planned turns (cycling past the stored instances) and each trajectory's length."""
    from replay import run as runner

    reads: list[int] = []
    real = runner.instance_turns

    def counted(shards: traces.Shards) -> list[int]:
        got = real(shards)
        reads.append(len(got))
        return got

    monkeypatch.setattr(runner, "instance_turns", counted)
    with LoopbackServer() as srv:
        run_dir = run(
            sample_shards, tmp_path / "run", srv.base_url, concurrency=2, num_trajectories=6, inject_delays=False
        )
    assert reads == [len(traces.Shards(sample_shards))]
    records = list(read_records(run_dir))
    assert read_run_info(run_dir).planned_turns == len(records) == 17 + 10 and all(r.ok for r in records)


def test_a_run_opens_its_shards_once_and_replays_the_bytes_it_verified(
    sample_shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, the slots read the run's own verified shards: the manifest is read once, each
    shard file is opened once, over the bytes the verification hashed (not the file again)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from traces.shards import reader

    made: list[str] = []
    sources: list[object] = []
    real_init, real_file = reader.Shards.__init__, pq.ParquetFile

    def counted_init(self: traces.Shards, path: Any) -> None:
        made.append(str(path))
        real_init(self, path)

    def counted_file(source: Any, *args: Any, **kw: Any) -> Any:
        sources.append(source)
        return real_file(source, *args, **kw)

    monkeypatch.setattr(reader.Shards, "__init__", counted_init)
    monkeypatch.setattr(pq, "ParquetFile", counted_file)
    with LoopbackServer() as srv:
        run_dir = run(sample_shards, tmp_path / "run", srv.base_url, concurrency=2, inject_delays=False)
    assert made == [str(sample_shards)]
    assert len(sources) == len(traces.Shards(sample_shards).manifest.shards)
    assert all(isinstance(src, pa.BufferReader) for src in sources)
    assert all(r.ok for r in read_records(run_dir))


def test_the_turn_timeout_and_idle_time_default_to_the_profiles_and_are_recorded(sample_shards: Path) -> None:
    """An official profile waits as the reference's official configuration does (a turn 14,400 s,
    not 600: a long answer at a low per-user speed outlasts minutes; a socket idle 0.5 s);
    --turn-timeout and --max-idle override them; run.json records what the run used."""
    import traces
    from replay.loop import WorkerPlan
    from replay.loop.backend import open_client
    from replay.run import run_info

    shards = traces.Shards(sample_shards)
    profile = traces.get_profile("qwen3.6-35b-a3b")
    info = run_info(
        RunConfig(shards=str(sample_shards), profile=profile.name), shards, profile, "http://h:1", "real", 1
    )
    assert (info.turn_timeout, info.max_idle) == (14_400.0, 0.5)
    given = RunConfig(shards=str(sample_shards), profile=profile.name, turn_timeout=30.0, max_idle=3.0)
    info = run_info(given, shards, profile, "http://h:1", "real", 1)
    assert (info.turn_timeout, info.max_idle) == (30.0, 3.0)
    client = open_client(WorkerPlan(0, (0,), str(sample_shards), profile, "http://h:1", max_idle_s=0.5))
    assert client._transport._max_idle_ns == 500_000_000  # the pool drops sockets idle longer
