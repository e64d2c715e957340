"""`traces.text`: listings for people at 80 columns, counts with thousands separators."""

from __future__ import annotations

import traces


def test_a_field_wraps_under_its_value_within_80_columns() -> None:
    value = "temperature=1.0, top_k=20, top_p=0.95, repetition_penalty=1.0, presence_penalty=1.5, " * 2
    lines = traces.field_lines("request parameters", value.strip(), label_width=18, indent=2)
    assert len(lines) > 1 and all(len(line) <= traces.TEXT_WIDTH for line in lines)
    assert lines[0].startswith("  request parameters  temperature=1.0")
    assert all(line.startswith(" " * 22) and line[22] != " " for line in lines[1:])


def test_a_path_longer_than_the_room_stays_whole() -> None:
    path = "/a/" + "very-long-folder-name/" * 5 + "run.json"
    lines = traces.field_lines("point", f"see {path}", label_width=6)
    assert path in lines[-1]  # on a line of its own, not cut in the middle


def test_an_empty_value_is_the_label_alone() -> None:
    assert traces.field_lines("finish", "", label_width=8) == ["finish"]


def test_counts_and_numbers() -> None:
    assert traces.format_count(30335) == "30,335"
    assert [traces.format_number(v) for v in (None, 0.25, 999.94, 1359.3, 128_000.0, 12_345_678.0)] == [
        "-",
        "0.2",
        "999.9",
        "1,359",
        "128,000",
        "12,346k",
    ]
    assert traces.format_number(1_234_567.0, 12) == "1,234,567"
