"""The report: numbers from run folders, per-user speed = Σ tokens / Σ E2E, reproducible output,
and the page opened in a real headless browser."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from browser import console_errors, dom, screenshot
from runfolders import gates, point_record, run_info

from replay import Gates, ReplayError, RunInfo, Slo, build_report
from replay.report.plots import curve_name, curves
from replay.report.points import collect_points, load_point
from replay.results import SweepPlan, SweepPoint
from replay.results.summary import build_summary


def make_run(folder: Path, concurrency: int, e2e_ms: int, tokens: int, **info_over: Any) -> Path:
    folder.mkdir(parents=True)
    records = [point_record(k, k * 100_000_000 // concurrency, e2e_ms, tokens) for k in range(12)]
    info = run_info(concurrency=concurrency, **info_over)
    info.write(folder)
    build_summary(records, info.to_json()).write(folder)
    return folder


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "sweep"
    make_run(root / "c0001", 1, 100, 40)
    make_run(root / "c0002", 2, 150, 40)
    make_run(root / "c0004", 4, 300, 40)
    SweepPlan({}, [1, 2, 4], [SweepPoint(c, f"c{c:04d}", "done") for c in (1, 2, 4)]).write(root)
    return root


def test_per_user_speed_is_tokens_over_e2e(sweep: Path) -> None:
    points = collect_points([("sys", sweep)], gates).points
    assert [p.concurrency for p in points] == [1, 2, 4]
    # 12 turns × 40 tokens over 12 × 0.1 s of E2E
    assert points[0].per_user_tps == pytest.approx(12 * 40 / (12 * 0.1))
    assert points[2].per_user_tps == pytest.approx(40 / 0.3)
    assert points[2].accurate is False and points[0].cache_hit == pytest.approx(0.5)


@pytest.mark.slow
def test_report_files_and_reproducibility(sweep: Path, tmp_path: Path) -> None:
    a = build_report([("sys", sweep)], tmp_path / "r1", cost_per_hour=2.0, power_watts=400.0, gates_of=gates)
    b = build_report([("sys", sweep)], tmp_path / "r2", cost_per_hour=2.0, power_watts=400.0, gates_of=gates)
    for name in ("points.csv", "points.json", "pareto.png", "report.html"):
        assert (a.parent / name).read_bytes() == (b.parent / name).read_bytes(), name
    data = json.loads((a.parent / "points.json").read_text())
    rows = {r["concurrency"]: r for r in data["points"]}
    assert rows[4]["on_frontier"] is False and rows[4]["inline_pass"] is False
    assert rows[1]["per_dollar_hour"] == pytest.approx(rows[1]["throughput_tps"] / 2.0)
    assert "per_watt" in data["definitions"]
    html = a.read_text()
    assert html.count('<tr class="point">') == 3 and html.count('<tr class="fail">') == 1
    assert "Dataset manifest hash: <code>abc123</code>" in html


@pytest.mark.slow
def test_reproducible_charts(sweep: Path, tmp_path: Path) -> None:
    """Every chart of the report, byte for byte, from the same folders."""
    a = build_report([("sys", sweep)], tmp_path / "r1", cost_per_hour=2.0, gates_of=gates).parent
    b = build_report([("sys", sweep)], tmp_path / "r2", cost_per_hour=2.0, gates_of=gates).parent
    pngs = sorted(p.name for p in a.glob("*.png"))
    assert len(pngs) == 8 and pngs == sorted(p.name for p in b.glob("*.png"))
    for name in pngs:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _started(day: int) -> str:
    return f"2026-01-{day:02d}T00:00:00+00:00"


def test_one_system_from_several_folders_keeps_the_latest_run_per_concurrency(sweep: Path, tmp_path: Path) -> None:
    later = make_run(tmp_path / "runB", 2, 50, 40, started_at=_started(9))  # a faster C=2, added later
    older = make_run(tmp_path / "runA", 4, 900, 40, started_at="2025-12-31T23:00:00")  # older than the sweep's
    found = collect_points([("sys", sweep), ("sys", later), ("sys", older)], gates)
    by_c = {p.concurrency: p for p in found.points}
    assert sorted(by_c) == [1, 2, 4] and len(found.points) == 3
    assert by_c[2].run_dir == str(later) and by_c[4].run_dir == str(sweep / "c0004")
    assert [(r.concurrency, Path(r.run_dir).name, Path(r.by).name) for r in found.replaced] == [
        (2, "c0002", "runB"),
        (4, "runA", "c0004"),
    ]
    page = build_report([("sys", sweep), ("sys", later), ("sys", older)], tmp_path / "r", gates_of=gates)
    html = page.read_text()
    assert html.count('<tr class="point">') == 3 and "2 earlier run(s) replaced by a later run" in html
    data = json.loads((page.parent / "points.json").read_text())
    assert {r["concurrency"]: r["run"] for r in data["points"]} == {1: "c0001", 2: "runB", 4: "c0004"}
    assert [r["by"] for r in data["replaced"]] == [str(later), str(sweep / "c0004")]


@pytest.mark.slow
def test_one_system_refuses_another_dataset_or_profile(sweep: Path, tmp_path: Path) -> None:
    other_data = make_run(tmp_path / "other-data", 8, 100, 40, content_hash="def4567890")
    with pytest.raises(ReplayError) as exc:
        collect_points([("sys", sweep), ("sys", other_data)])
    msg = str(exc.value)
    assert f"{sweep / 'c0001'} replayed dataset content hash abc123… but {other_data} replayed def4567890…" in msg
    assert "give the folders different --label names" in msg
    other_model = make_run(tmp_path / "other-model", 8, 100, 40, profile="qwen3.6-35b-a3b")
    with pytest.raises(ReplayError, match=r"ran profile kimi-k3 but .*other-model ran qwen3\.6-35b-a3b"):
        collect_points([("sys", sweep), ("sys", other_model)])
    # as two systems they are a comparison, and the report warns that the datasets differ
    page = build_report([("sys", sweep), ("other", other_data)], tmp_path / "r")
    assert 'id="dataset-warning"' in page.read_text()
    assert "Warning: these points come from different datasets" in page.read_text()
    assert 'id="dataset-warning"' not in build_report([("sys", sweep)], tmp_path / "same").read_text()


@pytest.mark.slow
def test_cli_label_takes_several_folders_of_one_system(sweep: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cli import cli

    later = make_run(tmp_path / "runB", 8, 100, 40, started_at=_started(9))
    out = tmp_path / "r"
    res = CliRunner().invoke(cli, ["report", "--label", f"mine={sweep},{later}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = json.loads((out / "points.json").read_text())["points"]
    assert [(r["label"], r["concurrency"]) for r in rows] == [("mine", 1), ("mine", 2), ("mine", 4), ("mine", 8)]
    bad = CliRunner().invoke(cli, ["report", "--label", f"mine={sweep},{tmp_path / 'nowhere'}", "--out", str(out)])
    assert bad.exit_code == 2 and "nowhere is not a folder" in bad.output


def research(run_dir: Path) -> Gates:
    """Verdicts of points judged by research gates: c0004 would dominate the official curve."""
    if run_dir.name == "c0004":
        return Gates(
            0.9, True, 40.0, True, "dataset", "dataset", "research gates: dataset-derived — not an official result"
        )
    return Gates(0.9, True, 40.0, True, "official", "official")


def test_research_points_draw_their_own_labelled_frontier(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    make_run(root / "c0001", 1, 100, 40)
    make_run(root / "c0002", 2, 150, 40)
    make_run(root / "c0004", 4, 10, 40)  # the fastest and the highest throughput: dominates both
    SweepPlan({}, [1, 2, 4], [SweepPoint(c, f"c{c:04d}", "done") for c in (1, 2, 4)]).write(root)
    page = build_report([("sys", root)], tmp_path / "r", gates_of=research)
    rows = {r["concurrency"]: r for r in json.loads((page.parent / "points.json").read_text())["points"]}
    assert rows[4]["gates"] == "dataset" and rows[1]["gates"] == "official"
    # the research point is on its own frontier; it does not push the official points off theirs
    assert rows[4]["on_frontier"] and rows[2]["on_frontier"]
    assert curve_name("sys", rows[4]["gates_note"], collect_points([("sys", root)], research).points[2:]) == (
        "sys (simulated target) — research gates: dataset-derived — not an official result"
    )
    html = page.read_text()
    assert "sys: research gates: dataset-derived — not an official result" in html
    assert '<div class="warn research">' in html


def test_the_page_reads_at_a_glance(sweep: Path, tmp_path: Path) -> None:
    big = make_run(tmp_path / "big", 1024, 100, 40, endpoint="http://gpu-box:8000", started_at=_started(3))
    page = build_report([("sys", sweep), ("big", big)], tmp_path / "r", gates_of=gates)
    html = page.read_text()
    # human column names, raw keys only as data attributes
    for key, name in (
        ("per_user_tps", "Per-user speed (tok/s)"),
        ("ttft_p50_ms", "TTFT p50 (ms)"),
        ("ttft_p90_ms", "TTFT p90 (ms)"),
        ("ttft_p99_ms", "TTFT p99 (ms)"),
        ("tpot_p50_ms", "TPOT p50 (ms)"),
        ("tpot_p90_ms", "TPOT p90 (ms)"),
    ):
        assert f'data-key="{key}">{name}</th>' in html
    table = html.split("<h2>Points</h2>", 1)[1].split("<h2>", 1)[0]
    assert not re.findall(r"<th[^>]*>[a-z_]+</th>", table)  # no machine key as a column name
    assert "<td>1,024</td>" in html  # thousands separated
    assert "<td>FAIL</td>" in html and "<td>pass</td>" in html and "<td>50.00%</td>" in html
    # TTFT is 5 ms for every turn of these runs
    rows = json.loads((page.parent / "points.json").read_text())["points"]
    assert {(r["ttft_p50_ms"], r["ttft_p90_ms"], r["ttft_p99_ms"]) for r in rows} == {(5.0, 5.0, 5.0)}
    assert all(r["tpot_p50_ms"] is not None for r in rows)
    # the server's settings, per system, from run.json
    settings = html.split("<h2>Server settings</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<th>Setting</th><th>big</th><th>sys</th>" in settings
    for text in ("http://gpu-box:8000", "http://127.0.0.1:1", "Served models (preflight)", "kimi-k3", "abc123"):
        assert text in settings


@pytest.mark.slow
def test_report_renders_in_headless_chromium(sweep: Path, tmp_path: Path) -> None:
    """The page as a person sees it: a screenshot (kept under TRAJBENCH_SCREENSHOTS, its path
    printed), the DOM after load, and no script error. One system is judged by research gates, a
    second by the official ones on another dataset, so every warning shows."""
    other = make_run(tmp_path / "other", 2, 120, 40, content_hash="def4567890", target="real", target_evidence=None)
    page = build_report(
        [("sys", sweep), ("other", other)],
        tmp_path / "r",
        gates_of=lambda d: research(d) if d.parent == sweep else gates(d),
    )
    shot, log = screenshot(page, "report", tmp_path, size="1200,2400")
    assert shot.is_file() and shot.stat().st_size > 20_000, log[-2000:]
    html, dom_log = dom(page, tmp_path)
    assert 'data-points="4"' in html
    assert html.count('<tr class="point">') == 4
    assert html.count("data:image/png;base64,") >= 7
    assert "Warning: these points come from different datasets" in html
    assert "sys: research gates: dataset-derived — not an official result" in html
    assert "measured against trajbench's simulator" in html
    assert console_errors(log + dom_log) == []


@pytest.mark.slow
def test_goodput_is_an_alternative_y_axis_of_the_pareto_report(tmp_path: Path) -> None:
    """Runs with an SLO (--slo): their goodput is a column and a second Pareto chart; a report of
    runs without one shows neither (test_report_files_and_reproducibility)."""
    root = tmp_path / "slo"
    slo = Slo(ttft_ms=1000.0, tpot_ms=None, session_s=0.5)  # t0 has 4 turns of 150 ms (0.6 s): late
    for c, e2e in ((1, 100), (2, 150)):
        folder = root / f"c{c:04d}"
        folder.mkdir(parents=True)
        records = [point_record(k, k * 100_000_000 // c, e2e, 40) for k in range(12)]
        info = run_info(concurrency=c, slo=slo)
        info.write(folder)
        build_summary(records, info.to_json(), slo=info.slo).write(folder)
    SweepPlan({}, [1, 2], [SweepPoint(c, f"c{c:04d}", "done") for c in (1, 2)]).write(root)
    out = build_report([("sys", root)], tmp_path / "r", gates_of=None)
    rows = {r["concurrency"]: r for r in json.loads((out.parent / "points.json").read_text())["points"]}
    # every turn meets TTFT 1 s: goodput of turns = throughput; sessions: 0.4 s each at C=1, 0.6 s at C=2
    assert rows[1]["goodput_tps"] == pytest.approx(rows[1]["throughput_tps"])
    assert rows[1]["session_goodput_tps"] == pytest.approx(rows[1]["throughput_tps"])
    assert rows[2]["session_goodput_tps"] == 0.0
    assert (out.parent / "pareto_goodput.png").is_file() and (out.parent / "pareto_session_goodput.png").is_file()
    html = out.read_text()
    assert '<h2 id="goodput">Goodput vs per-user speed</h2>' in html and 'data-key="goodput_tps"' in html


def test_a_session_limit_splits_the_session_goodput_curve_only(tmp_path: Path) -> None:
    """Runs with the same per-turn limits and different session limits judge every turn alike: their
    turn goodput shares one frontier, their session goodput does not."""
    from replay.report.page import goodput_points

    folders = []
    for c, slo in ((1, Slo(ttft_ms=1000.0, session_s=0.5)), (2, Slo(ttft_ms=1000.0, session_s=5.0))):
        folder = tmp_path / f"c{c:04d}"
        folder.mkdir()
        info = run_info(concurrency=c, slo=slo)
        info.write(folder)
        build_summary([point_record(k, k * 100_000_000, 100, 40) for k in range(12)], info.to_json(), slo=slo).write(
            folder
        )
        folders.append(folder)
    points = [load_point(f, "sys") for f in folders]
    infos = {p.run_dir: RunInfo.read(p.run_dir) for p in points}
    turns = goodput_points(points, infos, "goodput_tps")
    assert [p.label for p in turns] == ["sys", "sys"] and len(curves(turns)) == 1
    sessions = goodput_points(points, infos, "session_goodput_tps")
    assert [p.label for p in sessions] == [
        "sys (SLO TTFT 1000 ms, session 0.5 s)",
        "sys (SLO TTFT 1000 ms, session 5 s)",
    ]
    assert len(curves(sessions)) == 2


@pytest.mark.slow
def test_points_judged_by_different_slos_never_share_a_goodput_frontier(tmp_path: Path) -> None:
    """Goodput under a 1 s TTFT limit and under a 50 ms one do not compare: each SLO's points draw
    their own frontier (the SLO joins the curve's name); one SLO keeps the system's name."""
    from replay.report.page import goodput_points

    def point(c: int, slo: Slo) -> Path:
        folder = tmp_path / f"c{c:04d}"
        folder.mkdir()
        info = run_info(concurrency=c, slo=slo)
        info.write(folder)
        build_summary([point_record(k, k * 100_000_000, 100, 40) for k in range(12)], info.to_json(), slo=slo).write(
            folder
        )
        return folder

    loose, tight = Slo(ttft_ms=1000.0), Slo(ttft_ms=50.0, session_s=0.5)
    folders = [point(1, loose), point(2, loose), point(4, tight)]
    points = [load_point(f, "sys") for f in folders]
    infos = {p.run_dir: RunInfo.read(p.run_dir) for p in points}
    labels = [p.label for p in goodput_points(points, infos, "goodput_tps")]
    assert labels == ["sys (SLO TTFT 1000 ms)", "sys (SLO TTFT 1000 ms)", "sys (SLO TTFT 50 ms)"]
    sessions = [p.label for p in goodput_points(points, infos, "session_goodput_tps")]
    assert sessions == ["sys (SLO TTFT 1000 ms)", "sys (SLO TTFT 1000 ms)", "sys (SLO TTFT 50 ms, session 0.5 s)"]
    assert {p.label for p in goodput_points(points[:2], infos, "goodput_tps")} == {"sys"}
    assert {label for label, _ in curves(goodput_points(points, infos, "goodput_tps"))} == set(labels)
    out = build_report([("sys", f) for f in folders], tmp_path / "r", gates_of=None)
    assert "points judged by different SLOs never share a frontier" in out.read_text()
