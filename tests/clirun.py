"""Running `trajbench` in a child process, as a user (or an attacker) would: real argv, real
signals, real exit codes, stderr as printed, and the child's peak memory; and `in_process`, the
same command run in the test's own process (fast, for output and exit codes only).

The child is started through a tiny wrapper that waits for it and prints its peak RSS
(`ru_maxrss` of the waited child), so the figure is the command's own, not this test process's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:])\n"
    "sys.stderr.write('\\nPEAK_RSS_KB=%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str
    peak_rss_mb: float | None = None

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("Error:")]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def trajbench(*args: str, cwd: Path | None = None, timeout: float = 120, measure: bool = False) -> Done:
    """Run `trajbench ARGS` to completion."""
    argv = command(*args)
    if measure:
        argv = [sys.executable, "-c", _WRAPPER, *argv]
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_env())
    err, rss = p.stderr, None
    if measure:
        head, _, tail = err.rpartition("PEAK_RSS_KB=")
        err, rss = head.rstrip("\n"), int(tail.strip()) / 1024
    return Done(p.returncode, p.stdout, err, rss)


def interrupt_when(
    args: Sequence[str],
    ready: Callable[[], bool],
    sig: signal.Signals,
    *,
    cwd: Path | None = None,
    timeout: float = 120,
) -> Done:
    """Start `trajbench ARGS`, wait until `ready()` holds (polled, the observable state the test
    wants the signal in), send `sig` at once, and return how the command ended."""
    p = subprocess.Popen(command(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if p.poll() is not None:
                out, err = p.communicate()
                raise AssertionError(f"the command ended (exit {p.returncode}) before it was ready:\n{out}\n{err}")
            if time.monotonic() > deadline:
                raise AssertionError("the command never became ready")
            time.sleep(0.01)
        p.send_signal(sig)
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return Done(p.returncode, out, err)


def in_process(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `trajbench ARGV` run through `cli.main` in this process;
    `capsys` is pytest's fixture."""
    import cli

    try:
        cli.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err
