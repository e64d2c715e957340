"""A run where every turn failed exits 3, not 0, and says why; a sweep stops at such a point (and at
an interrupted one, exit 130) and resumes there; the exit codes are in `--help`."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import Conn, HostileServer, Request, answer, json_response
from loopback_server import LoopbackServer, Reply
from reliability_helpers import cli_in_process, cli_process, summary_of

from replay.results.records import read_records


def _status(status: int, message: str) -> Callable[[Conn, Request, int], bool]:
    def behave(conn: Conn, req: Request, n: int) -> bool:
        return conn.send(json_response(status, {"error": {"message": message}}))

    return behave


def test_when_every_turn_fails_the_run_exits_3_and_says_why(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    out = tmp_path / "run"
    with HostileServer(_status(500, "CUDA error: out of memory")) as srv:
        code, stdout, stderr = cli_in_process(
            [
                "replay",
                "run",
                str(make_shards({"a": [0.0, 0.0], "b": [0.0]})),
                "--endpoint",
                srv.url,
                "--out",
                str(out),
                "--no-delays",
            ],
            capsys,
        )
    assert code == 3
    assert stderr.strip() == (
        f"Error: every one of the 2 issued turns failed (http 2); nothing was measured. First error: http: HTTP 500: "
        f"CUDA error: out of memory. Fix the endpoint and rerun; every turn is in {out / 'records.jsonl.zst'}"
    )
    assert "--tokenizer" not in stdout + stderr  # no advice that cannot help
    assert f"run folder: {out}" in stdout and "errors        aborted 1, http 2" in stdout
    assert [r.error_kind for r in read_records(out)] == ["http", "aborted", "http"]
    s = summary_of(out)
    assert (s["trajbench"]["turns"]["sent"], s["trajbench"]["turns"]["ok"]) == (2, 0)
    assert (s["n_samples_issued"], s["n_samples_failed"]) == (3, 3)  # the reference's meanings: aborted is issued
    code, stdout, _ = cli_in_process(["eval", "osl", str(out)], capsys)  # the gate, asked for later
    assert code == 1 and "FAIL: every one of the 3 window turns failed: there is no output to measure" in stdout
    assert "--tokenizer" not in stdout


@pytest.mark.slow
def test_a_sweep_stops_at_a_point_where_every_turn_failed_and_resumes_there(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    shards = make_shards({"a": [0.0], "b": [0.0]})
    args = ["replay", "sweep", str(shards), "-c", "1,2", "--no-delays", "--out", str(tmp_path / "sweep")]
    with HostileServer(_status(503, "overloaded")) as srv:
        code, _, stderr = cli_in_process([*args, "--endpoint", srv.url], capsys)
        assert code == 3 and stderr.startswith("Error: C=1: every one of the 2 issued turns failed (http 2)")
        assert "the sweep stopped here (rerun the same command to resume from this point)" in stderr
        plan = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
        assert [p["status"] for p in plan["points"]] == ["failed", "pending"]
        srv.behave = answer  # the endpoint is fixed
        code, stdout, stderr = cli_in_process([*args, "--endpoint", srv.url], capsys)
    assert code == 0, stderr
    assert "C=1: replaying" in stdout and "kept" not in stdout  # the failed point is rerun, not kept
    assert [p["status"] for p in json.loads((tmp_path / "sweep" / "sweep.json").read_text())["points"]] == [
        "done",
        "done",
    ]


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_the_exit_codes_are_in_the_help(command: str, capsys) -> None:
    code, stdout, _ = cli_in_process(["replay", command, "--help"], capsys)
    text = " ".join(stdout.split())
    assert code == 0
    for line in (
        "Exit codes:",
        "0 finished, and at least one turn succeeded",
        "1 Error: something stopped the run",
        "2 a usage error",
        "3 every issued turn failed",
        "130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM",
    ):
        assert line in text


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_a_signal_ends_a_run_with_128_plus_its_number(
    sig: signal.Signals, code: int, make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    """One rule for every command: `replay run` exits 143 after SIGTERM (it said 130), as
    `replay sweep` and the other commands do; the run folder says it was interrupted."""
    out = tmp_path / "run"
    shards = str(make_shards({"a": [0.0, 0.0]}))
    # turns of 10 s: the signal lands mid-turn however slow the machine
    with LoopbackServer(lambda body, headers: Reply(chunks=20, chunk_delay=0.5)) as srv:
        args = ["replay", "run", shards, "--endpoint", srv.base_url, "--no-delays", "--drain-timeout", "0"]
        proc = cli_process([*args, "--out", str(out)])
        try:
            deadline = time.monotonic() + 60
            while not srv.books.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == code, err
    assert "Interrupted: issuing stopped early" in err and "Traceback" not in err
    assert summary_of(out)["trajbench"]["interrupted"] is True


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_at_its_point_with_exit_130(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    folder = tmp_path / "sweep"
    # turns of 10 s: the signal lands mid-turn however slow the machine
    with LoopbackServer(lambda body, headers: Reply(chunks=20, chunk_delay=0.5)) as srv:
        proc = cli_process(
            [
                "replay",
                "sweep",
                str(make_shards({"a": [0.0], "b": [0.0]})),
                "-c",
                "1,2",
                "--endpoint",
                srv.base_url,
                "--no-delays",
                "--drain-timeout",
                "0",
                "--out",
                str(folder),
            ]
        )
        try:
            deadline = time.monotonic() + 60
            while not srv.books.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        sent = len(srv.books.requests)
    assert proc.returncode == 130, err
    assert f"Interrupted: sweep {folder} stopped by a signal: C=1 was interrupted and will be rerun" in err
    assert [p["status"] for p in json.loads((folder / "sweep.json").read_text())["points"]] == [
        "interrupted",
        "pending",
    ]
    assert sent == 1 and not (folder / "c0002").exists()  # C=2 never started
