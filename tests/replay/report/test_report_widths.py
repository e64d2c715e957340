"""The report at common widths: at 1280 pixels no table needs scrolling sideways (seen in headless
chromium, with a screenshot), the concurrency labels of the Pareto chart never overlap, and its
legend lists only what the chart draws."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import console_errors, dom, screenshot
from runfolders import gates, point_record, run_info

from replay import Slo, build_report
from replay.report.pareto import Point
from replay.report.plots import pareto_figure
from replay.results import SweepPlan, SweepPoint
from replay.results.summary import build_summary

#: Appended to a copy of the page: which tables are wider than their box at this window width.
_MEASURE = """<script>
window.addEventListener("load", () => {
  const wide = [...document.querySelectorAll(".scroll")].filter(d => d.scrollWidth > d.clientWidth + 1);
  document.body.setAttribute("data-wide-tables", String(wide.length));
  document.body.setAttribute("data-page-width", String(document.documentElement.scrollWidth));
});
</script>"""


def _widest_sweep(root: Path, concurrencies: tuple[int, ...]) -> Path:
    """A sweep whose report has every optional column: goodput of turns and sessions (an SLO),
    and (given to build_report) cost and power."""
    slo = Slo(ttft_ms=1000.0, tpot_ms=50.0, session_s=0.5)
    for c in concurrencies:
        folder = root / f"c{c:04d}"
        folder.mkdir(parents=True)
        records = [point_record(k, k * 100_000_000 // c, 100 + 10 * c, 4000) for k in range(12)]
        info = run_info(concurrency=c, slo=slo)
        info.write(folder)
        build_summary(records, info.to_json(), slo=slo).write(folder)
    SweepPlan({}, list(concurrencies), [SweepPoint(c, f"c{c:04d}", "done") for c in concurrencies]).write(root)
    return root


@pytest.mark.slow
def test_no_table_scrolls_sideways_at_1280_pixels(tmp_path: Path) -> None:
    sweep = _widest_sweep(tmp_path / "sweep", (1, 2, 4, 8, 16, 32, 64, 128, 1024))
    page = build_report(
        [("a-long-system-name", sweep)], tmp_path / "r", cost_per_hour=98.32, power_watts=5600.0, gates_of=gates
    )
    html = page.read_text()
    assert 'data-key="goodput_tps"' in html and 'data-key="per_watt"' in html  # the widest table there is
    shot, log = screenshot(page, "report-1280", tmp_path, size="1280,2400")
    assert shot.is_file() and shot.stat().st_size > 20_000, log[-2000:]
    measured = tmp_path / "measured.html"
    measured.write_text(html.replace("</body>", _MEASURE + "</body>"))
    laid_out, dom_log = dom(measured, tmp_path, size="1280,900")
    wide = re.search(r'data-wide-tables="(\d+)"', laid_out)
    width = re.search(r'data-page-width="(\d+)"', laid_out)
    assert wide is not None and width is not None, dom_log[-2000:]
    assert int(wide.group(1)) == 0 and int(width.group(1)) <= 1280
    assert console_errors(log + dom_log) == []


def pt(c: int, x: float, y: float, label: str = "sys", accurate: bool = True) -> Point:
    return Point(
        label=label,
        run_dir=f"{label}/c{c}",
        concurrency=c,
        per_user_tps=x,
        throughput_tps=y,
        requests_per_s=1.0,
        ttft_p90_ms=None,
        cache_hit=None,
        failed_turns=0,
        issued_turns=1,
        inline_score=0.9,
        inline_pass=accurate,
        osl_mean=400.0,
        osl_pass=True,
    )


def test_concurrency_labels_never_overlap_even_on_crowded_points() -> None:
    # twelve points a few pixels apart, as a sweep of small concurrencies on a slow server draws them
    crowded = [pt(c, 100 - 0.4 * k, 50 + 0.5 * k) for k, c in enumerate((1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32))]
    crowded.append(pt(64, 5000.0, 9000.0))  # and one far away, to stretch the axes
    fig, labels = pareto_figure(crowded)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = [a.get_window_extent(renderer) for a in labels]
    inside = fig.axes[0].get_window_extent(renderer)
    assert 2 <= len(labels) < len(crowded)  # those with no free spot are left out, not drawn over others
    for i, a in enumerate(boxes):
        assert inside.contains(a.x0, a.y0) and inside.contains(a.x1, a.y1)
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


def test_every_label_is_drawn_when_the_points_are_apart() -> None:
    apart = [pt(c, 1000.0 / c, 300.0 * c) for c in (1, 2, 4, 8)]
    _, labels = pareto_figure(apart)
    assert sorted(a.get_text() for a in labels) == ["C=1", "C=2", "C=4", "C=8"]


@pytest.mark.parametrize("failing", ["other", "sys"])
def test_the_legend_lists_only_what_the_chart_draws(failing: str) -> None:
    """A system none of whose points passes the gates draws no frontier: no line in the legend,
    only its crosses."""
    points = [pt(1, 100.0, 50.0), pt(2, 60.0, 90.0), pt(1, 80.0, 40.0, "other"), pt(2, 50.0, 70.0, "other")]
    points = [
        p if p.label != failing else pt(p.concurrency, p.per_user_tps, p.throughput_tps, p.label, False) for p in points
    ]
    fig, _ = pareto_figure(points)
    drawn = fig.axes[0].get_legend()
    assert drawn is not None
    legend = {t.get_text() for t in drawn.get_texts()}
    drawing = "sys" if failing == "other" else "other"
    assert legend == {drawing, f"{failing}: fails an accuracy gate"}
