"""No run leaves a process behind, however it ends: the embedded simulator (and any worker) stops
when its parent is SIGKILLed, when its stdin pipe closes, and on SIGTERM even with streams in
flight. Real processes, real signals (the SIGKILL test reads Linux /proc to find the children)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from reliability_helpers import ROOT, cli_process

from replay.sim import start_simulator

#: real processes killed and signalled mid-run: slow, run by .ci/run (`-m slow`)
pytestmark = pytest.mark.slow

SLOW = "--osl-mean 400 --step-base-ms 20 --prefill-ms-per-token 0 --batch-ms-per-seq 0"  # turns of ~8 s: the run is mid-flight


def _state(pid: int) -> str | None:
    """The process state letter, or None when it no longer exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _gone(pid: int) -> bool:
    return _state(pid) in (None, "Z", "X")  # a zombie has exited; only its exit status is left


def _children(pid: int) -> list[tuple[int, str]]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid and not _gone(int(entry.name)):
                out.append((int(entry.name), cmd))
    return out


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find child processes")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_sigkilled_run_leaves_no_simulator_or_worker_behind(
    workers: int, make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    shards = make_shards({f"t{i}": [0.0, 0.0] for i in range(4)})
    out = tmp_path / "run"
    proc = cli_process(
        [
            "replay",
            "run",
            str(shards),
            "-c",
            "2",
            "--workers",
            str(workers),
            "--no-delays",
            "--out",
            str(out),
            "--sim-args",
            SLOW,
        ]
    )
    try:
        assert _wait(lambda: (out / "records.jsonl").exists() or proc.poll() is not None, 60), "the run never started"
        assert proc.poll() is None, proc.communicate()[1]
        port = int(json.loads((out / "run.json").read_text())["endpoint"].rsplit(":", 1)[1])
        want_workers = workers if workers > 1 else 0

        def started() -> bool:  # the records file opens before the worker processes are spawned
            kids = _children(proc.pid)
            return (
                sum("replay.sim" in c for _, c in kids) == 1 and sum("spawn_main" in c for _, c in kids) == want_workers
            )

        assert _wait(started, 30), _children(proc.pid)
        children = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _wait(lambda: all(_gone(pid) for pid, _ in children), 10), [
            (pid, cmd, _state(pid)) for pid, cmd in children
        ]
        assert _wait(lambda: _port_free(port), 5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def test_the_simulator_stops_when_its_stdin_pipe_closes() -> None:
    # the portable line of defence alone: its parent (this process) stays alive
    cmd = [sys.executable, "-m", "replay.sim", "--port", "0", "--parent-pid", str(os.getpid())]
    with subprocess.Popen(
        cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:  # closes the pipes on the way out
        try:
            assert proc.stdout is not None and proc.stdin is not None
            port = int(json.loads(proc.stdout.readline())["base_url"].rsplit(":", 1)[1])
            assert not _port_free(port)
            proc.stdin.close()
            assert proc.wait(10) == 0
            assert _port_free(port)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def test_sigterm_stops_the_simulator_with_streams_in_flight() -> None:
    with start_simulator(["--fail-rate", "1", "--fail-kinds", "stall", "--stall-seconds", "600"]) as sim:
        stalled = threading.Event()

        def hang() -> None:
            try:
                with httpx.stream(
                    "POST",
                    sim.base_url + "/v1/chat/completions",
                    timeout=30,
                    json={"messages": [{"role": "user", "content": "hi"}], "stream": True},
                ) as r:
                    stalled.set()
                    for _ in r.iter_raw():
                        pass
            except httpx.HTTPError:
                pass

        threads = [threading.Thread(target=hang, daemon=True) for _ in range(3)]
        for t in threads:
            t.start()
        assert stalled.wait(10)
        sim.process.send_signal(signal.SIGTERM)
        assert sim.process.wait(10) is not None
