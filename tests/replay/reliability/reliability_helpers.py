"""Helpers of the reliability tests: small shard sets, `trajbench` in-process or as a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import traces

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT / "tests" / "replay") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests" / "replay"))  # loopback_server, shared with the replay tests


def build_shards(folder: Path, trajectories: dict[str, list[float]], name: str) -> Path:
    """One user turn per delay, each trajectory with a system prompt (so it can be salted)."""
    from loopback_server import write_traces

    src = write_traces(folder / f"{name}.jsonl", trajectories)
    out = folder / name
    traces.build_shards([str(src)], out, traces.BuildOptions(name=name))
    return out


def cli_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`trajbench ARGS` through `cli.main` in this process: (exit code, stdout, stderr)."""
    from cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def cli_command(args: list[str]) -> list[str]:
    """The command line of `trajbench ARGS` run by this interpreter."""
    return [sys.executable, "-c", "import sys, cli; sys.argv[0] = 'trajbench'; cli.main(sys.argv[1:])", *args]


def cli_process(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    """`trajbench ARGS` as a child process (text pipes)."""
    return subprocess.Popen(
        cli_command(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw
    )


# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent (here pytest, whose
# own size then decides the figure); VmHWM belongs to the new program's memory map.
_MEASURED = (
    "import atexit, re, sys, cli\n"
    "hwm = lambda: re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
    "atexit.register(lambda: print(f'PEAK_RSS_KB {hwm()}', file=sys.stderr))\n"
    "sys.argv[0] = 'trajbench'\n"
    "cli.main(sys.argv[1:])\n"
)


def cli_measured(args: list[str], timeout: float = 120) -> tuple[int, str, str, float]:
    """`trajbench ARGS` in a child process that reports its own peak RSS as it exits:
    (exit code, stdout, stderr without that line, peak RSS in MiB)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    lines = done.stderr.splitlines()
    peak = [int(line.split()[1]) for line in lines if line.startswith("PEAK_RSS_KB ")]
    assert peak, f"the child did not report its peak RSS; stderr:\n{done.stderr}"
    err = "\n".join(line for line in lines if not line.startswith("PEAK_RSS_KB "))
    return done.returncode, done.stdout, err, peak[0] / 1024


def summary_of(run_dir: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((run_dir / "performance" / "result_summary.json").read_text("utf-8"))
    return summary
