"""Ctrl-C during a run: what is finished stays on disk, the running agent stops at its next step,
the summary is written with the rest incomplete, and the command exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toy import ScriptedEndpoint, instance, make_repo, write_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240), pytest.mark.usefixtures("swebench_extra")]

ROOT = Path(__file__).resolve().parents[3]


def _wait_for(check, what: str, limit: float = 150.0) -> None:
    end = time.monotonic() + limit
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


def test_ctrl_c_keeps_finished_work_and_writes_the_summary(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    _, base = make_repo(repos)
    dataset = write_jsonl(
        tmp_path / "v.jsonl",
        [
            instance("toy__calc-1", "fix", base),
            instance("toy__calc-2", "slow", base),
            instance("toy__calc-3", "fix", base),
        ],
    )
    out = tmp_path / "out"
    with ScriptedEndpoint() as endpoint:
        args = [
            "eval",
            "swebench",
            "--dataset",
            str(dataset),
            "--endpoint",
            endpoint.url,
            "--profile",
            "kimi-k3",
            "--instances",
            "3",
            "--workers",
            "1",
            "--runtime",
            "local",
            "--repos",
            str(repos),
            "--out",
            str(out),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from cli import main; main({args!r})"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            _wait_for(
                lambda: (
                    (out / "toy__calc-1" / "grade.json").is_file()
                    and "step 2:" in _read(out / "toy__calc-2" / "agent.log")
                ),
                "the first instance graded and the second one working",
            )
            proc.send_signal(signal.SIGINT)
            output, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, output
    assert "stopping the running agents at their next step" in output
    s = json.loads((out / "swebench_summary.json").read_text())
    assert s["results"] == {"toy__calc-1": "resolved", "toy__calc-2": "incomplete", "toy__calc-3": "incomplete"}
    traj = json.loads((out / "toy__calc-2" / "trajectory.json").read_text())
    assert traj["info"]["exit_status"] == "Interrupted"
    assert not (out / "toy__calc-2" / "patch.diff").exists() and not (out / "toy__calc-3").exists()


def _read(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""
