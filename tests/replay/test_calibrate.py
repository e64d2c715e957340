"""`trajbench replay calibrate` end to end on a tiny load (counts and invariants; no timing asserts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streams import parse_stream

import cli
from replay.calibrate.server import FRAME_PREFIX, FRAME_SUFFIX, STAMP_DIGITS


def test_calserver_frame_is_a_valid_chunked_sse_event() -> None:
    frame = FRAME_PREFIX + b"%020d" % 123 + FRAME_SUFFIX
    size, rest = frame.split(b"\r\n", 1)
    assert int(size, 16) == len(rest) - 2 and rest.endswith(b"\r\n")
    s = parse_stream([(7, rest[:-2])])
    assert "".join(s.content).split() == ["0" * (STAMP_DIGITS - 3) + "123"] and s.chunk_ns == [7]


def test_calibrate_command_runs_both_phases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.json"
    cli.main(["replay", "calibrate", "-c", "4", "--turns", "8", "--tokens-per-turn", "8", "--json", str(out)])
    printed = capsys.readouterr().out
    assert "throughput" in printed and "timing" in printed
    rows = json.loads(out.read_text("utf-8"))
    assert [(r["phase"], r["client"]) for r in rows] == [("throughput", "trajbench"), ("timing", "trajbench")]
    through, timing = rows
    lengths = [4 + (n * 7919) % 9 for n in range(8)]  # the server's spread of 8 ± 4 chunks
    assert (through["turns"], through["failed"], through["chunks"]) == (8, 0, sum(lengths))
    assert (timing["turns"], timing["failed"]) == (8, 0)  # at least 2 turns per slot
    # one host, one monotonic clock: a chunk never arrives before the server stamped it
    for r in rows:
        assert r["ttft_err_p50_ms"] >= 0 and r["ttft_err_p99_ms"] >= r["ttft_err_p50_ms"]
        assert r["cpu_s"] > 0 and r["wall_s"] > 0


def test_calibrate_refuses_more_workers_than_slots(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["replay", "calibrate", "-c", "1", "--workers", "2"])
    assert exc.value.code == 1
    assert "every worker needs a slot" in capsys.readouterr().err
