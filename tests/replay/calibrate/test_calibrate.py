"""`trajbench replay calibrate` end to end on a tiny load (counts and invariants; no timing asserts)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streams import parse_stream

import cli
import replay
from replay.calibrate.server import FRAME_PREFIX, FRAME_SUFFIX, STAMP_DIGITS


def test_calserver_frame_is_a_valid_chunked_sse_event() -> None:
    frame = FRAME_PREFIX + b"%020d" % 123 + FRAME_SUFFIX
    size, rest = frame.split(b"\r\n", 1)
    assert int(size, 16) == len(rest) - 2 and rest.endswith(b"\r\n")
    s = parse_stream([(7, rest[:-2])])
    assert "".join(s.content).split() == ["0" * (STAMP_DIGITS - 3) + "123"] and list(s.chunk_ns) == [7]


def test_calibrate_command_runs_both_phases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.json"
    args = ["-c", "4", "--turns", "8", "--tokens-per-turn", "8", "--paced", "20,2,6", "--json", str(out)]
    cli.main(["replay", "calibrate", *args])
    printed = capsys.readouterr().out
    assert "saturated" in printed and "paced: first chunk after 20 ms, then one every 2 ms, 6 chunks" in printed
    rows = json.loads(out.read_text("utf-8"))
    ours = f"trajbench-{replay.event_loop()}"  # the loop a replay runs on
    assert [(r["phase"], r["client"]) for r in rows] == [("saturated", ours), ("paced", ours)]
    saturated, paced = rows
    lengths = [4 + (n * 7919) % 9 for n in range(8)]  # the server's spread of 8 ± 4 chunks
    assert (saturated["turns"], saturated["failed"], saturated["chunks"]) == (8, 0, sum(lengths))
    paced_lengths = [3 + (n * 7919) % 7 for n in range(8)]  # 6 ± 3
    assert (paced["turns"], paced["failed"], paced["chunks"]) == (8, 0, sum(paced_lengths))  # 2 turns per slot
    # every paced turn waited out the server's 20 ms time to first token
    assert paced["wall_s"] >= 2 * 0.020
    # one host, one monotonic clock: a chunk never arrives before the server stamped it
    for r in rows:
        assert r["ttft_err_p50_ms"] >= 0 and r["ttft_err_p99_ms"] >= r["ttft_err_p50_ms"]
        assert r["cpu_s"] > 0 and r["wall_s"] > 0


def test_calibrate_pins_server_and_clients_apart() -> None:
    from replay.calibrate.run import pin_layout

    server, clients = pin_layout(True)
    assert pin_layout(False) == (None, None)
    if server is not None and clients is not None:  # 2+ CPUs: disjoint, and together all we may use
        assert not server & clients and server | clients == frozenset(os.sched_getaffinity(0))


def test_calibrate_rejects_a_bad_pacing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["replay", "calibrate", "--paced", "50,5"])
    assert exc.value.code == 2 and "TTFT_MS,ITL_MS,TOKENS" in capsys.readouterr().err


def test_calibrate_refuses_more_workers_than_slots(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["replay", "calibrate", "-c", "1", "--workers", "2"])
    assert exc.value.code == 1
    assert "every worker needs a slot" in capsys.readouterr().err


@pytest.fixture(scope="module")
def sample_shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import traces

    out = tmp_path_factory.mktemp("cal") / "shards"
    traces.build_shards([str(Path(traces.__file__).parent / "data" / "sample.jsonl")], out, traces.BuildOptions())
    return out


@pytest.mark.slow
def test_calibrate_on_shards_runs_the_real_command_and_reads_its_records(
    sample_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import traces
    from replay.run import instance_turns, planned_turns

    out = tmp_path / "cal.json"
    args = ["--shards", str(sample_shards), "-c", "3", "--trajectories", "5", "--phase", "paced"]
    cli.main(["replay", "calibrate", *args, "--paced", "10,1,4", "--json", str(out)])
    assert "whole ms" in capsys.readouterr().out
    [row] = json.loads(out.read_text("utf-8"))
    shards = traces.Shards(sample_shards)
    # every turn of the 5 instances (cycling over the stored ones) was sent and answered
    assert row["turns"] == planned_turns(instance_turns(shards), 5) and row["failed"] == 0
    assert row["chunks"] >= 2 * row["turns"]  # the server's 4 ± 2 chunks a turn
    # the whole process (start-up, verification, scoring) costs more than its streaming phase
    assert row["process_cpu_s"] > row["cpu_s"] > 0
    assert row["server_cores"] > 0 and 0 <= row["ttft_err_p50_ms"] <= row["ttft_err_p99_ms"]
    assert row["first_ttft_err_p99_ms"] is not None


def test_the_sessions_file_rebuilds_each_turns_prompt(sample_shards: Path, tmp_path: Path) -> None:
    import orjson

    import traces
    from replay.calibrate.workload import write_sessions

    lines = write_sessions(sample_shards, tmp_path).read_bytes().splitlines()
    params = orjson.loads(lines[0])["params"]
    shards = traces.Shards(sample_shards)
    profile, _ = traces.shards_profile(shards, quiet_without_tokenizer=True)
    assert len(lines) == 1 + len(shards)
    for k, line in enumerate(lines[1:]):
        session = orjson.loads(line)
        history: list[dict[str, object]] = []
        for delta, prompt in zip(session["turns"], traces.iter_prompts(shards.instance(k)), strict=True):
            history += delta
            assert history == prompt.messages  # what `replay run` sends for this turn
        assert dict(params, messages=history) == {
            k: v for k, v in traces.request_body(history, None, profile).items() if k != "tools"
        }


def test_cpu_sampler_interpolates_between_samples() -> None:
    from replay.calibrate.workload import CpuSampler, tree_cpu_s

    sampler = CpuSampler(os.getpid())
    sampler.samples = [(1_000, 1.0), (3_000, 2.0)]
    assert (sampler.cpu_at(500), sampler.cpu_at(2_000), sampler.cpu_at(9_000)) == (1.0, 1.5, 2.0)
    assert (tree_cpu_s(os.getpid()) or 0) > 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--shards", "nowhere"], "nowhere: no such folder; pass a folder written by `trajbench traces build`"),
        (["--trajectories", "3"], "--trajectories counts the instances of --shards"),
    ],
)
def test_calibrate_checks_its_workload_before_any_server_starts(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay.calibrate import run

    def no_server(*a: object, **k: object) -> None:
        raise AssertionError("a server was started")

    monkeypatch.setattr(run, "_Server", no_server)
    with pytest.raises(SystemExit) as exc:
        cli.main(["replay", "calibrate", *args])
    assert exc.value.code == 1 and said in capsys.readouterr().err


def test_the_floor_client_sends_the_bodies_replay_run_sends(sample_shards: Path, tmp_path: Path) -> None:
    import traces
    from replay.calibrate.floor import _instances
    from replay.calibrate.workload import write_sessions

    sessions = write_sessions(sample_shards, tmp_path)
    shards = traces.Shards(sample_shards)
    profile, _ = traces.shards_profile(shards, quiet_without_tokenizer=True)
    n = len(shards) + 1  # one more instance than stored: the first one's bodies again (unsalted)
    for k, bodies in enumerate(_instances(str(sessions), n, 0, 0)):
        encoder = traces.BodyEncoder(profile)
        expected = [encoder.encode(p.messages, p.tools) for p in traces.iter_prompts(shards.instance(k % len(shards)))]
        assert list(bodies) == expected  # byte for byte, key order included


def test_the_floor_runs_beside_ours_and_reads_every_chunk(tmp_path: Path) -> None:
    out = tmp_path / "cal.json"
    args = ["-c", "3", "--turns", "6", "--tokens-per-turn", "8", "--phase", "saturated", "--compare", "floor"]
    cli.main(["replay", "calibrate", *args, "--json", str(out)])
    ours, floor = json.loads(out.read_text("utf-8"))
    assert floor["client"] == "floor" and ours["client"].startswith("trajbench-")
    # the server's spread of 8 ± 4 chunks, by request: ours sent the first six, the floor the next
    lengths = [4 + (n * 7919) % 9 for n in range(12)]
    assert (ours["turns"], ours["chunks"]) == (6, sum(lengths[:6]))
    assert (floor["turns"], floor["failed"], floor["chunks"]) == (6, 0, sum(lengths[6:]))
    assert floor["cpu_s"] > 0 and 0 <= floor["ttft_err_p50_ms"] <= floor["ttft_err_p99_ms"]


def test_the_floor_finds_the_bodys_last_chunk_split_over_two_reads() -> None:
    import asyncio

    from replay.calibrate.floor import _Floor

    async def reads(*parts: bytes) -> bool:
        floor = _Floor()
        floor.done = asyncio.get_running_loop().create_future()
        for part in parts:
            floor.data_received(part)
        return floor.done.done()

    assert asyncio.run(reads(b"e\r\ndata: [DONE]\n\n\r\n0\r", b"\n\r\n"))
    assert asyncio.run(reads(b"e\r\ndata: [DONE]\n\n\r\n", b"0\r\n\r\n"))
    assert not asyncio.run(reads(b"e\r\ndata: [DONE]\n\n\r\n0\r\n"))  # not yet the end
