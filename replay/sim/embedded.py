"""Run the simulator as a child process on a free loopback port, for replay and tests.

`with start_simulator(SimConfig(...)) as sim:` launches `python -m replay.sim`, waits for its ready
line and for GET /health, yields a handle with `.base_url`, and stops the child on exit. A child
that dies or hangs during start-up raises `SimulatorStartError` carrying the tail of its stderr.
A separate process (not a thread) keeps the simulator's CPU off the replay client's event loop.

The child never outlives this process: it gets `--parent-pid` and a stdin pipe only we hold, and
stops when we end, even by SIGKILL (`replay.sim.lifeline`). Call `start_simulator` from the
thread that keeps the simulator (Linux ties the parent-death signal to the launching thread).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import httpx

from .config import SimConfig, config_from_options, config_to_args
from .errors import SimError
from .metrics import parse_metrics


class SimulatorStartError(SimError):
    """The simulator child process did not come up."""


@dataclass
class SimHandle:
    base_url: str
    process: subprocess.Popen[bytes]
    args: list[str]

    def metrics(self) -> dict[str, dict[str, float]]:
        """The parsed /metrics page: `{series: {replica or kind: value}}`."""
        return parse_metrics(httpx.get(self.base_url + "/metrics", timeout=10).text)

    def health(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(self.base_url + "/health", timeout=10).json()
        return body


def _args(options: SimConfig | list[str] | dict[str, Any] | None) -> list[str]:
    if options is None:
        return []
    if isinstance(options, list):
        return list(options)
    if isinstance(options, dict):
        options = config_from_options(options)
    return config_to_args(options)


def _tail(f: IO[bytes], limit: int = 2000) -> str:
    f.flush()
    f.seek(0)
    text = f.read().decode("utf-8", "replace").strip()
    return text[-limit:] or "(no output on stderr)"


def _read_ready_line(proc: subprocess.Popen[bytes], deadline: float) -> str | None:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=0.1):
                if proc.poll() is not None:
                    return None
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return None
            buf += chunk
            if b"\n" in buf:
                return buf.split(b"\n", 1)[0].decode("utf-8", "replace")
    finally:
        sel.close()
    return None


def _drain(stream: IO[bytes]) -> None:
    while stream.read(65536):
        pass


@contextmanager
def start_simulator(
    options: SimConfig | list[str] | dict[str, Any] | None = None, *, timeout: float = 120.0, python: str | None = None
) -> Iterator[SimHandle]:
    """Start a simulator (options as a SimConfig, a dict of its fields, or CLI arguments)."""
    args = _args(options)
    cmd = [
        python or sys.executable,
        "-m",
        "replay.sim",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--parent-pid",
        str(os.getpid()),
        *args,
    ]
    with tempfile.TemporaryFile() as err:
        # stdin: a pipe nobody writes to; its closing (we stop or die) is the child's cue to stop
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.PIPE)
        try:
            line = _read_ready_line(proc, time.monotonic() + timeout)
            if line is None:
                try:  # stdout closed: the child is exiting; let its exit code show
                    proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
                state = (
                    f"exited with code {proc.poll()}"
                    if proc.poll() is not None
                    else f"gave no ready line within {timeout:.0f} s"
                )
                raise SimulatorStartError(
                    f"simulator ({' '.join(cmd[1:])}) {state}; its stderr ends with:\n{_tail(err)}"
                )
            try:
                base_url = json.loads(line)["base_url"]
            except (ValueError, KeyError, TypeError):
                raise SimulatorStartError(
                    f"simulator printed {line!r} instead of its ready line; stderr:\n{_tail(err)}"
                ) from None
            assert proc.stdout is not None
            threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
            _wait_healthy(base_url, proc, time.monotonic() + timeout, err)
            yield SimHandle(base_url, proc, args)
        finally:
            _stop(proc)


def _wait_healthy(base_url: str, proc: subprocess.Popen[bytes], deadline: float, err: IO[bytes]) -> None:
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SimulatorStartError(
                f"simulator at {base_url} exited with code {proc.returncode}; stderr:\n{_tail(err)}"
            )
        try:
            r = httpx.get(base_url + "/health", timeout=2)
            if r.status_code == 200 and r.json().get("simulated") is True:
                return
            last = f"HTTP {r.status_code}"
        except httpx.HTTPError as exc:
            last = str(exc)
        time.sleep(0.05)
    raise SimulatorStartError(f"simulator at {base_url} never answered GET /health ({last}); stderr:\n{_tail(err)}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()
