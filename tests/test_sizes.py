"""One meaning of a size in tokens everywhere: k = 1,000 and M = 1,000,000, in `traces stats
--cache-sizes`, the simulator's `--cache-tokens` (serve-sim and --sim-args) and the tables."""

from __future__ import annotations

import click
import pytest

import cli
import traces
from replay.sim import config_from_args


@pytest.mark.parametrize(
    ("text", "value"),
    [("65536", 65_536), ("120k", 120_000), ("120K", 120_000), ("1.5M", 1_500_000), ("2g", 2_000_000_000), ("0", 0)],
)
def test_parse_size_is_decimal(text: str, value: int) -> None:
    assert traces.parse_size(text) == value


@pytest.mark.parametrize("text", ["", "k", "lots", "-5", "1.5", "1.2345k", "nan", "inf", "12x"])
def test_a_bad_size_says_what_a_size_looks_like(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a size: a whole number, or with k = 1,000, M = 1,000,000"):
        traces.parse_size(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (120_000, "120k"),
        (1_500_000, "1.5M"),
        (500_000, "500k"),
        (2_000_000_000, "2G"),
        (999, "999"),
        (131_072, "131,072"),
    ],
)
def test_format_size_reads_back_exactly(value: int, text: str) -> None:
    assert traces.format_size(value) == text
    assert traces.parse_size(text.replace(",", "")) == value


def test_the_simulator_reads_120k_as_120000() -> None:
    assert config_from_args(["--cache-tokens", "120k"]).cache_tokens == 120_000
    assert config_from_args(["--cache-tokens", "unlimited"]).cache_tokens is None
    option = next(p for p in cli.cli.commands["serve-sim"].params if p.name == "cache_tokens")
    assert isinstance(option, click.Option)
    assert option.type.convert("120k", option, None) == 120_000
    assert "[default: 500k]" in (option.help or "") and "k = 1,000" in (option.help or "")


def test_stats_cache_sizes_read_120k_as_120000() -> None:
    assert cli._sizes("120k, 1M,4096") == (120_000, 1_000_000, 4_096)
    with pytest.raises(click.BadParameter, match="'12x' is not a size"):
        cli._sizes("12x")
