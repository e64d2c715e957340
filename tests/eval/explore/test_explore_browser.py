"""The explorer as a buyer uses it, in headless chromium over the DevTools protocol: opened from
disk, filters change the curves, normalisation changes the axis, hover shows a point's figures,
a click opens its record and its run's report, a URL restores a view, failed points are hidden
until asked for and marked when shown, research points are labelled on the chart, a system's
history can be drawn; a screenshot at 1280 px is taken and checked.

Skipped without chromium (tests/browser.py's `chromium()`)."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from devtools import Chromium
from explore_trees import Submitter, hardware, make_sweep, passing_review

from eval.explore import build_explorer
from replay import Gates, Slo
from replay.report import Point, frontier

#: a real browser on a built explorer: slow, run by .ci/run (`-m slow`)
pytestmark = pytest.mark.slow

READY = "document.body.dataset.painted === '1'"


def gates(run_dir: Path) -> Gates:
    """Official gates everywhere; rack4's point at C=4 fails inline accuracy."""
    if "rack4" in run_dir.parts and "online-c0004" in run_dir.parts:
        return Gates(0.31, False, 400.0, True, "official", "official")
    return Gates(0.6, True, 420.0, True, "official", "official")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, trees: Submitter) -> Path:
    root = tmp_path_factory.mktemp("explore") / "in"
    trees.submission(
        root / "acme",
        engine_says="vllm 0.9.1",
        concurrencies=(1, 2, 4, 8, 16, 32),
        slo=Slo(ttft_ms=2000.0),
    )
    passing_review(root / "acme", 1, 2, 4, 8, 16, 32)
    rack = hardware(accelerator_type="MI355X", accelerator_count=4, price_per_hour_usd=18.0, power_watts=None)
    trees.submission(
        root / "beta-feb",
        submitter="beta",
        system="rack4",
        trajbench=rack,
        concurrencies=(1, 4, 16, 64),
        speed=0.7,
        engine_says="sglang 0.5",
    )
    trees.submission(  # a month later: C=16 and C=64 again, faster
        root / "beta-mar",
        submitter="beta",
        system="rack4",
        date="2026-03-01",
        trajbench=rack,
        concurrencies=(16, 64),
        speed=0.8,
        engine_says="sglang 0.5",
    )
    make_sweep(root / "lab-sim", [1, 2, 4, 8], speed=1.3, target="simulated", target_evidence="embedded")
    build_explorer([root], root.parent / "site", gates_of=gates)
    return root.parent / "site"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    with Chromium(tmp_path_factory.mktemp("chromium")) as page:
        yield page


@pytest.fixture
def page(browser: Chromium, site: Path) -> Iterator[Chromium]:
    browser.open((site / "index.html").as_uri(), ready=READY)
    yield browser
    assert browser.errors() == []


def data(site: Path) -> dict[str, Any]:
    text = (site / "data.js").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text[text.index("= ") + 2 :].rstrip().removesuffix(";"))
    return loaded


def fronts(page: Chromium) -> dict[str, list[str]]:
    """The frontiers the chart draws: `system/kind` → the ids of its points, in order."""
    drawn: dict[str, list[str]] = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#pareto path.front')]"
        ".map(e => [e.dataset.s + '/' + e.dataset.kind, e.dataset.front.split(' ')]))"
    )
    return drawn


def drawn_points(page: Chromium, chart: str = "pareto") -> list[str]:
    ids: list[str] = page.evaluate(f"window.trajbenchExplore.drawn('{chart}')")
    return ids


def at(page: Chromium, point: str, chart: str = "pareto") -> tuple[float, float]:
    """Where a point is drawn, in the viewport (its chart scrolled into view)."""
    where = page.evaluate(f"window.trajbenchExplore.at('{chart}', '{point}')")
    assert where is not None, f"{point} is not drawn on {chart}"
    return float(where[0]), float(where[1])


def as_point(p: dict[str, Any]) -> Point:
    """A point of the page's data as the report's frontier takes it (its id as its run)."""
    return Point(
        label=p["system"],
        run_dir=p["id"],
        concurrency=p["concurrency"],
        per_user_tps=p["per_user_tps"],
        throughput_tps=p["throughput_tps"],
        requests_per_s=p["requests_per_s"],
        ttft_p90_ms=None,
        cache_hit=None,
        failed_turns=0,
        issued_turns=0,
        inline_score=None,
        inline_pass=None,
        osl_mean=None,
        osl_pass=None,
    )


def shown(v: float) -> str:
    """A figure as the page shows it: 0 decimals from 100, 1 from 1, else 3, rounded half away
    from zero on the number's exact value (as the browser's Intl does), no trailing zeros."""
    places = 0 if abs(v) >= 100 else 1 if abs(v) >= 1 else 3
    exact = Decimal(v).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return f"{exact:,f}".rstrip("0").rstrip(".") if places else f"{exact:,f}"


def png_size(path: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def test_the_default_view_a_buyer_sees(page: Chromium, site: Path, tmp_path: Path) -> None:
    assert page.evaluate("typeof window.trajbenchExplore.drawnMs") == "number"
    assert fronts(page).keys() == {"acme-box8/official", "beta-rack4/official", "lab-sim/research"}
    # failed points are hidden by default, and the page says how many
    assert "beta-rack4.c4" not in drawn_points(page)
    assert "1 point(s) that failed an accuracy gate or the review are hidden" in page.evaluate(
        "document.getElementById('banners').textContent"
    )
    # research (here: simulated) points are labelled on the chart itself
    assert page.evaluate(
        "[...document.querySelectorAll('#pareto text[data-tag=research]')].map(t => t.textContent)"
    ) == ["lab-sim — research · simulated"]
    shot = page.screenshot("explore-default", tmp_path)
    width, height = png_size(shot)
    assert width == 1280 and height > 1200
    assert shot.stat().st_size > 40_000  # charts, not a blank page


def test_each_curve_is_the_reports_frontier_of_its_points(page: Chromium, site: Path) -> None:
    """The page's step curves go through exactly the points replay.report.frontier keeps."""
    d = data(site)
    for key, ids in fronts(page).items():
        sid, kind = key.split("/")
        pool = [
            p
            for p in d["points"]
            if p["system"] == sid
            and p["current"]
            and p["verdict"] != "failed"
            and p["research"] == (kind == "research")
        ]
        expected = frontier([as_point(p) for p in pool])
        assert ids == [p.run_dir for p in expected], key


def test_filters_change_the_visible_curves(page: Chromium) -> None:
    page.click("input[data-list=submitter][value=acme]")
    assert fronts(page).keys() == {"acme-box8/official"}
    assert "submitter=acme" in page.evaluate("location.hash")
    page.click("input[data-list=submitter][value=acme]")
    page.click("input[data-list=engine][value='sglang 0.5']")
    assert fronts(page).keys() == {"beta-rack4/official"}
    page.click("input[data-list=engine][value='sglang 0.5']")
    page.click("input[data-list=verdict][value=research]")  # hide research points
    assert fronts(page).keys() == {"acme-box8/official", "beta-rack4/official"}
    assert not any(p.startswith("lab-sim") for p in drawn_points(page))


def test_failed_points_are_marked_when_shown_and_never_on_a_frontier(page: Chromium) -> None:
    page.click("input[data-list=verdict][value=failed]")
    assert "beta-rack4.c4" in drawn_points(page)
    # a red cross, tagged on the chart
    assert page.evaluate("document.querySelector('#pareto path.marks[data-kind=failed]').dataset.s") == "beta-rack4"
    assert page.evaluate("[...document.querySelectorAll('#pareto text[data-tag=failed]')].length") == 1
    assert all("beta-rack4.c4" not in ids for ids in fronts(page).values())
    assert "1 failed point(s) shown" in page.evaluate("document.getElementById('banners').textContent")


def test_normalisation_changes_the_axis(page: Chromium) -> None:
    def axis() -> tuple[str, list[str]]:
        label = page.evaluate("document.querySelector('#pareto .axis text.title:last-of-type').textContent")
        ticks = page.evaluate(
            "[...document.querySelectorAll('#pareto .axis text[text-anchor=end]')].map(t => t.textContent)"
        )
        return label, ticks

    label, ticks = axis()
    assert label == "system throughput (output tok/s)"
    page.click("input[name=norm][value=watt]")
    label_w, ticks_w = axis()
    assert label_w == "system throughput (output tok/s per W)" and ticks_w != ticks
    # a system whose description gives no power is not drawn per watt, and the page says why
    assert fronts(page).keys() == {"acme-box8/official"}
    banner = page.evaluate("document.getElementById('banners').textContent")
    assert "Not drawn per watt (no power): beta / rack4" in banner and "lab-sim (no system description" in banner
    page.click("input[name=norm][value=accelerator]")
    assert axis()[0] == "system throughput (output tok/s per accelerator)"
    assert fronts(page).keys() == {"acme-box8/official", "beta-rack4/official"}


def test_hover_shows_a_points_figures(page: Chromium, site: Path) -> None:
    p = next(p for p in data(site)["points"] if p["id"] == "acme-box8.c4")
    page.move(*at(page, "acme-box8.c4"))
    page.wait_for("!document.getElementById('tip').hidden")
    tip = page.evaluate("document.getElementById('tip').innerText")
    assert "acme / box8 · C=4" in tip and "reviewed" in tip
    assert f"Per-user speed\t{shown(p['per_user_tps'])} tok/s" in tip
    assert f"System throughput\t{shown(p['throughput_tps'])} tok/s" in tip
    ttft = " / ".join(shown(p[f"ttft_p{q}_ms"]) for q in (50, 90, 99))
    assert f"TTFT p50 / p90 / p99\t{ttft} ms" in tip
    assert "Inline accuracy\t60.00% pass" in tip and "SWE-bench (mean of 4)\t71.00%" in tip
    assert "Audits\t2 of 2 checks passed" in tip
    assert "Goodput of turns" in tip and "(SLO TTFT 2000 ms)" in tip
    # away from every point the figures go; the charts against concurrency answer a hover too
    x, y = at(page, "acme-box8.c4")
    page.move(x, y - 40)
    page.wait_for("document.getElementById('tip').hidden")
    page.move(*at(page, "beta-rack4.c16", "c-ttft90"))
    page.wait_for("!document.getElementById('tip').hidden")
    assert "beta / rack4 · C=16" in page.evaluate("document.getElementById('tip').innerText")


def test_a_click_opens_the_points_record_and_its_runs_report(page: Chromium, site: Path) -> None:
    page.click_at(*at(page, "beta-rack4.c16"))
    page.wait_for("!document.getElementById('detail').hidden")
    detail = page.evaluate("document.getElementById('detail').innerText")
    assert "beta / rack4 · C=16" in detail and "unknown" in detail and "Audits\tnot reviewed" in detail
    assert "closed/beta/systems/rack4.json: gives no power" in detail
    href = page.evaluate("document.getElementById('run-page').getAttribute('href')")
    run = next(p["run"] for p in data(site)["points"] if p["id"] == "beta-rack4.c16")
    assert (site / href).read_bytes() == (Path(run) / "report.txt").read_bytes()
    assert "beta-mar/closed/beta/results/rack4/kimi-k3/online-c0016/trajbench" in run  # March's C=16
    assert "point=beta-rack4.c16" in page.evaluate("location.hash")


def test_a_url_restores_the_view(page: Chromium, tmp_path: Path) -> None:
    page.click("input[name=norm][value=dollar]")
    page.click("input[data-list=verdict][value=failed]")
    page.click("input[data-pick=acme-box8]")
    page.click("input[data-pick=beta-rack4]")
    page.click("#hist")
    page.click_at(*at(page, "acme-box8.c8"))
    url = page.evaluate("location.href")
    assert url.endswith(
        "#norm=dollar&verdict=failed,research,reviewed,unknown&pick=acme-box8,beta-rack4&hist=1&point=acme-box8.c8"
    )
    view = page.evaluate("document.querySelector('main').innerHTML")
    page.open(url, ready=READY)  # a new tab, as a shared link opens
    assert page.evaluate("document.querySelector('main').innerHTML") == view
    assert page.evaluate("document.querySelector('input[name=norm][value=dollar]').checked") is True
    assert page.evaluate("document.getElementById('hist').checked") is True
    assert page.evaluate("location.href") == url
    shot = page.screenshot("explore-restored-view", tmp_path)
    assert png_size(shot)[0] == 1280


def test_history_draws_earlier_frontiers_and_replaced_runs(page: Chromium) -> None:
    page.click("#hist")
    days = page.evaluate(
        "[...document.querySelectorAll('#pareto path.hist')].map(e => e.dataset.s + '@' + e.dataset.day)"
    )
    assert days == ["beta-rack4@2026-02-01"]
    assert "beta-rack4.c64.r1" in drawn_points(page)  # February's C=64, replaced in March
    page.move(*at(page, "beta-rack4.c64.r1"))
    page.wait_for("!document.getElementById('tip').hidden")
    assert "replaced by a later run" in page.evaluate("document.getElementById('tip').innerText")


def test_goodput_under_a_chosen_slo(page: Chromium) -> None:
    page.click("input[name=y][value=goodput]")
    assert page.evaluate("document.getElementById('slo').value") == "TTFT 2000 ms"
    assert fronts(page).keys() == {"acme-box8/official"}
    banner = page.evaluate("document.getElementById('banners').textContent")
    assert "No goodput of turns under SLO TTFT 2000 ms for beta / rack4; lab-sim" in banner
    assert page.evaluate("document.querySelector('#pareto .axis text.title:last-of-type').textContent") == (
        "goodput of turns (output tok/s, SLO TTFT 2000 ms)"
    )
