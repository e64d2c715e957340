"""A file full of errors prints the first 20 errors and a count of the rest, not one line per
error, from `traces validate` and `traces build` alike; a file of another format than --format
says so once, naming the format that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

import cli
import traces
from traces.synth import synthesize

MORE = "… and {n} more errors; first fix the ones above"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    return int(stop.value.code or 0), capsys.readouterr().err


def _bad_rows(path: Path, n: int) -> Path:
    path.write_text("".join(f'{{"x": {k}}}\n' for k in range(1, n + 1)))
    return path


def test_validate_prints_twenty_errors_then_counts_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _bad_rows(tmp_path / "bad.jsonl", 45)
    code, err = _run(["traces", "validate", str(src)], capsys)
    lines = err.splitlines()
    assert code == 1
    assert lines[:20] == [
        f"{src}:{k}: conversation_id must be a non-empty printable ASCII string, got None" for k in range(1, 21)
    ]
    assert lines[20:] == [MORE.format(n=25), "Error: 45 error(s); 0 valid trajectories (0 client turns)"]


def test_twenty_errors_or_fewer_are_all_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _bad_rows(tmp_path / "bad.jsonl", 20)
    code, err = _run(["traces", "validate", str(src)], capsys)
    assert code == 1 and len(err.splitlines()) == 21 and "more error" not in err


def test_a_wrong_format_is_one_line_that_names_the_right_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "synthetic.jsonl"
    synthesize(src, scale=0.02)  # 1,214 mlperf-jsonl rows, read as workflow traces: every row is wrong
    code, err = _run(["traces", "validate", "--format", "workflow", str(src)], capsys)
    assert code == 1
    assert err.splitlines() == [
        f"{src}: not --format workflow (one sim_NNN support conversation per record, with its system prompt): "
        "its first record has the keys conversation_id, turn, role, content, system, tools, which make --format "
        "mlperf-jsonl (one message per record); pass --format mlperf-jsonl",
        "Error: 1 error(s); 0 valid trajectories (0 client turns)",
    ]


@pytest.mark.parametrize(
    ("fmt", "good", "right"),
    [
        ("mlperf-jsonl", "openai-messages/good/chats.jsonl", "openai-messages"),
        ("mlperf-jsonl", "atif/good/acme__widgets-202.json", "atif"),
        ("atif", "mini-swe-agent/good/acme__widgets-101.traj.json", "mini-swe-agent"),
        ("mlperf-jsonl", "snapshots/good/support.jsonl", "snapshots"),
        ("mini-swe-agent", "atif/good/acme__widgets-202.json", "atif"),
        ("mlperf-jsonl", "workflow/good/support.jsonl", "workflow"),
    ],
)
def test_each_format_is_named_when_another_is_given(
    fmt: str, good: str, right: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src = Path(__file__).parents[2] / "data" / "formats" / good
    code, err = _run(["traces", "validate", "--format", fmt, str(src)], capsys)
    (line, last) = err.splitlines()
    assert code == 1 and line.startswith(f"{src}: not --format {fmt} (") and line.endswith(f"; pass --format {right}")
    assert last == "Error: 1 error(s); 0 valid trajectories (0 client turns)"


def test_a_file_of_the_right_format_keeps_its_own_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Flat rows with errors of their own are not "another format": every error is listed."""
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(f'{{"conversation_id": "c{k}", "turn": 1, "role": "user"}}\n' for k in range(3)))
    code, err = _run(["traces", "validate", str(src)], capsys)
    assert code == 1 and len(err.splitlines()) == 4 and "not --format" not in err


def test_build_reports_the_same_way_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _bad_rows(tmp_path / "bad.jsonl", 45)
    code, err = _run(["traces", "build", str(src), "--out", str(tmp_path / "shards")], capsys)
    lines = err.splitlines()
    assert code == 1 and not (tmp_path / "shards").exists()
    assert lines[0] == "Error: 45 error(s) in the input:"
    assert len(lines) == 22 and lines[1].startswith(f"{src}:1: ") and lines[-1] == MORE.format(n=25)


def test_one_more_error_is_singular() -> None:
    errors = [traces.TraceFormatError("f.jsonl", k, "bad") for k in range(1, 22)]
    assert traces.error_lines(errors)[-1] == "… and 1 more error; first fix the ones above"
    assert traces.error_count(errors) == 21
