"""`traces stats` tables fit an 80-column terminal: no cell is cut ("…"), every header shows,
for the sample's numbers and for the largest the official dataset can give (lengths in
characters run to millions)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from traces import from_json, to_json
from traces.analysis import Stats, StatsOptions, compute_stats, stats_tables

HEADERS = [
    ["domain", "metric", "n", "mean", "p50", "p90", "p99", "max"],
    ["salt", "domain", "within", "cross", "ideal"],
    ["cache size", "hit fraction"],
]


def _render(stats: Stats, width: int = 80) -> list[str]:
    out = []
    for table in stats_tables(stats):
        buf = io.StringIO()
        Console(width=width, file=buf, force_terminal=False).print(table)
        out.append(buf.getvalue())
    return out


def _huge(stats: Stats) -> Stats:
    """The same tables with every length, count and delay as wide as a real dataset makes them."""
    big: dict[str, Any] = to_json(stats)
    for d in big["domains"].values():
        d["trajectories"], d["client_turns"] = 613, 121_340
        for key in ("turns_per_trajectory", "isl", "delta", "expected_osl", "delay_seconds"):
            d[key].update(n=121_340, mean=987_654.321, p50=999_999, p90=1_234_567.8, p99=12_345_678, max=123_456_789)
        d["delay_seconds"]["total"] = 1_234_567.891
    for p in big["lru"]["points"]:
        p["capacity"] = 123_456_789
    return from_json(Stats, big)


@pytest.fixture(scope="module")
def stats(sample_shards: Path) -> Stats:
    return compute_stats(sample_shards, options=StatsOptions(concurrency=4))


@pytest.mark.parametrize("wide", [False, True], ids=["sample", "largest numbers"])
def test_every_table_fits_80_columns_uncut(stats: Stats, wide: bool) -> None:
    tables = _render(_huge(stats) if wide else stats)
    assert len(tables) == 3
    for text, headers in zip(tables, HEADERS, strict=True):
        assert "…" not in text, text
        assert max(len(line) for line in text.splitlines()) <= 80, text
        for h in headers:
            assert h in text, (h, text)
    if wide:
        assert "1.23M" in tables[0] and "999,999" in tables[0] and "12.35M" in tables[0]


def test_the_numbers_are_the_stats(stats: Stats) -> None:
    text = _render(stats, width=200)[0]
    all_ = stats.domains["all"]
    row = next(line for line in text.splitlines() if " ISL " in line).split()
    assert row[:2] == ["ISL", f"{all_.isl.n:,}"] and row[-1] == f"{round(all_.isl.max or 0):,}"
    assert f"{all_.client_turns:,}" in next(line for line in text.splitlines() if "client turns" in line)
