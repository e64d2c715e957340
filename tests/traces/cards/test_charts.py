"""Charts that read at a glance (traces.png, traces.analysis.plots): decimal token units, log2
concurrency ticks with integer labels, zero-based y-axes, the cost of salting in tokens, and the
data cards' charts opened in a real headless browser (screenshot kept, path printed)."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import console_errors, dom, screenshot

from traces.analysis import compute_stats, write_plots
from traces.analysis.stats import reuse_lost
from traces.analysis.statsfile import Reuse, ReuseFailed
from traces.png import (
    Axes,
    concurrency_axis,
    count_axis,
    log_token_axis,
    number_axis,
    plt,
    token_axis,
    tokens,
    zero_based,
)

CARDS = Path(__file__).resolve().parents[3] / "data_cards"


@pytest.fixture
def ax() -> Iterator[Axes]:
    fig, axes = plt.subplots()
    yield axes
    plt.close(fig)


def _labels(ax: Axes, axis: str) -> list[str]:
    ax.figure.canvas.draw()
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in ticks if t.get_text()]


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (2.5, "2.5"),
        (950, "950"),
        (1_000, "1k"),
        (1_500, "1.5k"),
        (64_000, "64k"),
        (65_536, "65.5k"),  # k is 1,000: a power of two is not a round number
        (999_999, "1M"),
        (1_000_000, "1M"),
        (2_500_000, "2.5M"),
        (3e9, "3B"),
        (-2_000, "−2k"),
    ],
)
def test_token_counts_read_in_decimal_units(n: float, text: str) -> None:
    assert tokens(n) == text


def test_concurrency_ticks_at_powers_of_two_with_integer_labels(ax: Axes) -> None:
    ax.plot([1, 3, 8], [1, 2, 3])
    concurrency_axis(ax, [1, 3, 8])
    assert _labels(ax, "x") == ["1", "2", "4", "8"]
    ax.plot([1, 1500], [1, 2])
    concurrency_axis(ax, [1, 1500])
    assert _labels(ax, "x") == ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1,024", "2,048"]


def test_an_all_zero_series_sits_on_the_floor_and_others_start_at_zero(ax: Axes) -> None:
    ax.plot([1, 2, 4], [0, 0, 0])
    zero_based(ax, [0, 0, 0])
    assert ax.get_ylim() == (0, 1)
    ax.plot([1, 2, 4], [100.2, 100.4, 100.3])  # noise around 100 is not blown up into the whole axis
    zero_based(ax, [100.2, 100.4, 100.3])
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] == pytest.approx(100.4 * 1.08)


def test_axes_label_tokens_and_thousands(ax: Axes) -> None:
    ax.plot([0, 1], [0, 250_000])
    token_axis(ax.yaxis)
    assert "200k" in _labels(ax, "y")
    ax.set_xscale("log")
    ax.plot([4096, 2_097_152], [0, 1])
    log_token_axis(ax.xaxis, 4096, 2_097_152)
    assert {"10k", "100k", "1M"} <= set(_labels(ax, "x"))
    number_axis(ax.yaxis)
    assert "200,000" in _labels(ax, "y")


def test_salting_cost_is_counted_in_tokens_against_no_salting() -> None:
    """The reuse chart and table show what each salt mode loses against no salting, in units of
    input: misses with the salt minus misses without."""
    reuse: dict[str, dict[str, Reuse] | ReuseFailed] = {
        "mlperf": {"all": Reuse(units=1_000_000, within=0.95, cross=0.01, ideal=0.96)},
        "none": {"all": Reuse(units=990_000, within=0.95, cross=0.02, ideal=0.97)},
        "strong": ReuseFailed("no system prompt"),
    }
    lost = reuse_lost(reuse)
    assert list(lost) == ["mlperf"]
    assert lost["mlperf"]["all"].lost == pytest.approx(0.04 * 1_000_000 - 0.03 * 990_000)
    assert lost["mlperf"]["all"].cross_lost == pytest.approx(0.02 * 990_000 - 0.01 * 1_000_000)
    assert reuse_lost({"mlperf": reuse["mlperf"]}) == {}  # no baseline: nothing to compare with


def test_stats_charts_are_the_same_bytes_twice(sample_shards: Path, tmp_path: Path) -> None:
    stats = compute_stats(sample_shards)
    a = write_plots(stats, tmp_path / "a")
    b = write_plots(stats, tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def _card_page(tmp_path: Path) -> tuple[Path, list[Path]]:
    images = sorted((CARDS / "img").glob("*.png"))
    figures = "".join(
        f'<figure><img src="{img.resolve().as_uri()}" alt="{html.escape(img.stem)}"><figcaption>{html.escape(img.name)}'
        "</figcaption></figure>"
        for img in images
    )
    page = tmp_path / "cards.html"
    page.write_text(
        '<!doctype html><html><head><meta charset="utf-8"><title>data card charts</title>'
        "<style>body{font-family:sans-serif}figure{display:inline-block;margin:6px}img{width:560px}</style>"
        "<script>window.addEventListener('load', () => {"
        "const ok = [...document.images].filter(i => i.complete && i.naturalWidth > 0);"
        "document.body.dataset.loaded = ok.length;"
        "document.body.dataset.sizes = ok.map(i => i.naturalWidth + 'x' + i.naturalHeight).join(' ');"
        "});</script></head>"
        f"<body><h1>Charts of the data cards</h1>{figures}</body></html>",
        encoding="utf-8",
    )
    return page, images


@pytest.mark.slow
def test_data_card_charts_render_in_headless_chromium(tmp_path: Path) -> None:
    """Every chart the data cards embed, opened as a person opens it: each one loads, at the size
    the plot functions draw (7 x 4.6 in, 7 x 4 in at 100 dpi)."""
    page, images = _card_page(tmp_path)
    assert len(images) >= 9
    shot, log = screenshot(page, "data-card-charts", tmp_path, size="1200,2100")
    assert shot.is_file() and shot.stat().st_size > 50_000, log[-2000:]
    text, dom_log = dom(page, tmp_path)
    assert f'data-loaded="{len(images)}"' in text, dom_log[-2000:]
    sizes = text.split('data-sizes="', 1)[1].split('"', 1)[0].split()
    growth = [s for s, img in zip(sizes, images, strict=True) if img.name.endswith("isl_growth.png")]
    assert set(growth) == {"700x460"} and set(sizes) - set(growth) == {"700x400"}
    assert console_errors(log + dom_log) == []


def test_count_axes_tick_whole_numbers_only(ax: Axes) -> None:
    ax.plot([0, 1], [0, 5])
    ax.set_ylim(0, 5)
    count_axis(ax.yaxis)
    labels = _labels(ax, "y")
    assert labels and all(t.isdigit() for t in labels) and len(set(labels)) == len(labels)
