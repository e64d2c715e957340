"""What a replay shows while it runs and what a sweep prints as it goes: a piped `replay run`
writes plain status lines to stderr while it is still running (not only at its end), `--progress
none` writes none, the live line keeps its count and elapsed time at 80 columns, and a sweep
prints each point's headline numbers as it finishes and a table of every point at the end."""

from __future__ import annotations

import asyncio
import io
import json
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from clirun import ROOT, command
from loopback_server import LoopbackServer, Reply
from rich.console import Console

import traces
from replay.config import RunConfig
from replay.report.display import RunState, run_progress
from replay.report.sweep_table import sweep_table
from replay.results.records import read_records
from replay.sweep import run_sweep

#: ~0.25 s per turn (10 tokens at 25 ms a step): the sample's 17 turns take about 4 s.
SLOW = "--osl-mean 10 --osl-cv 0 --step-base-ms 25"
STATUS = re.compile(r"^replay  \d+/17 turns  errors \d+  .*elapsed \d:\d\d:\d\d")


def _env(seconds: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), traces.PROGRESS_SECONDS_ENV: seconds}


@pytest.mark.slow
def test_a_piped_run_prints_status_lines_while_it_runs(sample_shards: Path, tmp_path: Path) -> None:
    argv = command("replay", "run", str(sample_shards), "--no-delays", "--out", str(tmp_path / "run"))
    p = subprocess.Popen(
        [*argv, "--sim-args", SLOW], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env("0.2")
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in p.stderr or ():
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(STATUS.match(line) for line in seen):
            assert p.poll() is None, f"the run ended before any status line: {seen}"
            assert time.monotonic() < deadline, f"no status line within 60 s: {seen}"
            try:
                seen.append(lines.get(timeout=0.1))
            except queue.Empty:
                continue
        assert p.poll() is None  # the line came while the replay was still running
    finally:
        p.terminate()  # SIGTERM: the run drains and records what finished (we have what we came for)
        p.communicate(timeout=60)
    assert "Traceback" not in "".join(seen)


@pytest.mark.slow
def test_progress_none_prints_no_status_line(sample_shards: Path, tmp_path: Path) -> None:
    argv = [*command("replay", "run", str(sample_shards), "--no-delays", "--out", str(tmp_path / "run"))]
    argv += ["--progress", "none", "--sim-args", "--osl-mean 10 --osl-cv 0 --step-base-ms 5"]
    done = subprocess.run(argv, capture_output=True, text=True, env=_env("0.05"), timeout=120)
    assert done.returncode == 0, done.stderr
    records = list(read_records(tmp_path / "run"))
    span_ns = max(r.t_last_ns or 0 for r in records) - min(r.t_send_ns for r in records)
    assert span_ns > 10 * 0.05e9  # the replay lasted many intervals: plain mode would have printed
    assert not [line for line in done.stderr.splitlines() if line.startswith("replay  ")], done.stderr


def test_the_live_line_keeps_count_and_elapsed_at_80_columns() -> None:
    state = RunState(total_turns=30_335, done=12_345, errors=7, aborted=3, output_tokens=10**9)
    state.first_send_ns = time.monotonic_ns() - 3_600 * 10**9
    bar = run_progress(state, lambda: (128, 64), concurrency=256, window_closed=lambda: False, mode="none")
    bar.advance(12_345)
    out = io.StringIO()
    Console(width=80, file=out).print(bar)
    text = out.getvalue()
    assert text.count("\n") == 1 and len(text.rstrip("\n")) <= 80, text
    assert "12,345/30,335 turns" in text and "elapsed 0:00:00" in text and "errors 7" in text, text
    assert "…" not in text
    assert "128 active 64 waiting /256" in bar.line() and "window open" in bar.line()  # the plain line has all


def test_a_sweep_prints_each_point_and_a_table_of_all(sample_shards: Path, tmp_path: Path) -> None:
    said: list[str] = []
    again: list[str] = []
    with LoopbackServer(lambda b, h: Reply(chunks=3)) as srv:
        base = RunConfig(shards=str(sample_shards), endpoint=srv.base_url, inject_delays=False, progress="none")
        scored = lambda d: said.append(f"scored {d.name}")  # noqa: E731
        folder = asyncio.run(run_sweep(base, [1, 2], tmp_path / "sweep", after_point=scored, echo=said.append))
        # resumed after C=2 lost its summary: C=1 is kept, C=2 rerun
        (folder / "c0002" / "performance" / "result_summary.json").unlink()
        asyncio.run(run_sweep(base, [1, 2], folder, echo=again.append))
    rows = []
    for c in (1, 2):
        ours = json.loads((folder / f"c{c:04d}" / "performance" / "result_summary.json").read_text())["trajbench"]
        tps = ours["throughput"]["output_tokens_per_s"]
        user = ours["interactivity"]["e2e_interactivity"]
        p90 = ours["ttft"]["percentiles"]["90.0"] / 1e6
        rows.append([str(c), "done", f"{tps:,.1f}", f"{user:,.1f}", f"{p90:,.1f}", "0"])
        if c == 1:  # C=1's numbers are the same in both sweeps: it was kept
            line = f"C=1: {tps:,.1f} tok/s  per-user {user:,.1f} tok/s  TTFT p90 {p90:,.1f} ms  errors 0"
            # replaying, then its numbers as soon as the point is done, then its gates
            start = said.index("C=1: replaying …")
            assert said[start + 1 : start + 3] == [line, "scored c0001"]
    assert said[said.index("C=2: replaying …") + 1].startswith("C=2: ")
    for table in (said[said.index("scored c0002") + 1 :], again[again.index("C=1: kept (already done)") + 3 :]):
        assert table[0].split() == ["C", "status", "tok/s", "per-user", "tok/s", "TTFT", "p90", "ms", "errors"]
        assert all(len(r) <= 80 for r in table)
    assert [r.split() for r in again[-2:]] == rows  # the table of the resumed sweep: every point's numbers


def test_a_point_without_a_summary_shows_its_status_and_no_numbers() -> None:
    table = sweep_table([(1, "interrupted", None), (2, "pending", None)])
    assert [r.split() for r in table[2:]] == [
        ["1", "interrupted", "-", "-", "-", "-"],
        ["2", "pending", "-", "-", "-", "-"],
    ]
