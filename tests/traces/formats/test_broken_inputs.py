"""The corpus of broken inputs: each error names the file, the line and the rule, `validate`
lists them all, and a failed build leaves no output folder behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import cli
from traces import BuildOptions, TraceError, build_shards, validate_sources

BROKEN = Path(__file__).parents[1] / "data" / "broken"

CASES = [
    ("bad_json.jsonl", 3, "not valid JSON"),
    ("missing_role.jsonl", 2, "role must be one of user, assistant, tool"),
    ("user_after_user.jsonl", 2, "a user row cannot come after a user row"),
    ("non_contiguous.jsonl", 4, "rows of one conversation must be contiguous; it started at line 1"),
    ("turn_gap.jsonl", 2, "turn 2 is missing"),
    ("empty_tool_calls.jsonl", 2, "tool_calls must be a non-empty list"),
    ("tool_without_call.jsonl", 3, "a tool row must follow an assistant row with tool_calls"),
    ("empty_user_content.jsonl", 1, "a user row needs a non-empty string content"),
    ("negative_delay.jsonl", 3, "delay_seconds must be a number >= 0"),
    ("huge_delay.jsonl", 3, "delay_seconds must be at most 86,400 (24 h), got 1e+300"),
    ("empty.jsonl", None, "holds no data rows"),
]


def _assert_build_fails_cleanly(src: Path, tmp_path: Path, match: str) -> None:
    out = tmp_path / "out" / "shards"
    with pytest.raises(TraceError, match=match):
        build_shards([str(src)], out, BuildOptions())
    assert not out.exists()
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(("name", "line", "rule"), CASES)
def test_each_broken_file_names_line_and_rule(name: str, line: int | None, rule: str, tmp_path: Path) -> None:
    src = BROKEN / name
    _, _, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert errors, name
    message = str(errors[0])
    where = f"{src}:{line}:" if line else f"{src}:"
    assert message.startswith(where), message
    assert rule in message
    _assert_build_fails_cleanly(src, tmp_path, rule.split(";")[0][:30].replace("(", r"\(").replace("[", r"\["))


def test_conversation_and_turn_are_named() -> None:
    _, _, errors = validate_sources([str(BROKEN / "tool_without_call.jsonl")], "mlperf-jsonl")
    assert "conversation c1 turn 3:" in str(errors[0])


def test_invalid_utf8(tmp_path: Path) -> None:
    src = tmp_path / "latin1.jsonl"
    src.write_bytes(b'{"conversation_id":"c1","turn":1,"role":"user","content":"caf\xe9","system":"S"}\n')
    _, _, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert str(errors[0]).startswith(f"{src}:1: invalid UTF-8")
    _assert_build_fails_cleanly(src, tmp_path, "invalid UTF-8")


def test_fifty_megabyte_line(tmp_path: Path) -> None:
    src = tmp_path / "huge.jsonl"
    with src.open("w") as fh:
        fh.write('{"conversation_id":"c1","turn":1,"role":"user","content":"hi","system":"S"}\n')
        fh.write('{"conversation_id":"c1","turn":2,"role":"assistant","content":"' + "x" * (50 * 1024 * 1024) + '"}\n')
    _, _, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert str(errors[0]).startswith(f"{src}:2: line is 52,428,8")
    assert "byte limit of one row" in str(errors[0])
    _assert_build_fails_cleanly(src, tmp_path, "byte limit")


def test_unsaltable_conversation_fails_the_build_before_any_output(tmp_path: Path) -> None:
    _assert_build_fails_cleanly(BROKEN / "unsaltable.jsonl", tmp_path, "cannot be salted")
    build_shards([str(BROKEN / "unsaltable.jsonl")], tmp_path / "ok", BuildOptions(salt="none"))


def test_validate_lists_every_error_with_a_count() -> None:
    files = [str(BROKEN / name) for name, _, _ in CASES]
    result = CliRunner().invoke(cli, ["traces", "validate", *files])
    assert result.exit_code == 1
    for name, line, _ in CASES:
        assert f"{name}:{line}:" in result.output if line else name in result.output
    printed = [line for line in result.output.splitlines() if line.strip()]
    # every file repeats the id c1, so the duplicate-id rule fires too: one line per error
    assert str(result.exception).startswith(f"{len(printed)} error(s);")
    assert any("already appears in" in line for line in printed)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        validate_sources([str(tmp_path / "nope.jsonl")], "mlperf-jsonl")
