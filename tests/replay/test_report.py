"""The report: numbers from run folders, per-user speed = Σ tokens / Σ E2E, reproducible output,
and the page opened in a real headless browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from runfolders import run_info

from replay import Gates, Record, build_report
from replay.points import load_points
from replay.summary import build_summary
from replay.sweep import SweepPlan, SweepPoint


def _record(k: int, send: int, e2e_ms: int, tokens: int) -> Record:
    return Record(
        instance_id=f"t{k % 3}",
        trajectory_id=f"t{k % 3}",
        repeat=1,
        turn=2 * k + 1,
        client_turn_index=k,
        slot=0,
        worker=0,
        prompt_sha256="0" * 64,
        salt_repeat="4461",
        salt_conversation="e643",
        t_send_ns=send,
        t_first_ns=send + 5_000_000,
        t_last_ns=send + e2e_ms * 1_000_000,
        chunk_ns=tuple(send + 5_000_000 + j * 1_000_000 for j in range(tokens)),
        delay_s=0.0,
        in_window=True,
        content="x",
        reasoning="",
        tool_calls=(),
        finish_reason="stop",
        prompt_tokens=100,
        completion_tokens=tokens,
        cached_tokens=50,
        client_prompt_tokens=None,
        client_output_tokens=None,
        http_status=200,
        error_kind=None,
        error_message=None,
    )


def make_run(folder: Path, concurrency: int, e2e_ms: int, tokens: int) -> Path:
    folder.mkdir(parents=True)
    records = [_record(k, k * 100_000_000 // concurrency, e2e_ms, tokens) for k in range(12)]
    info = run_info(concurrency=concurrency)
    info.write(folder)
    build_summary(records, info.to_json()).write(folder)
    return folder


def gates(run_dir: Path) -> Gates:
    """The accuracy verdicts the report draws (eval's files in a real sweep): c0004 fails inline."""
    inline_pass = run_dir.name != "c0004"
    return Gates(inline_score=0.9 if inline_pass else 0.1, inline_pass=inline_pass, osl_mean=40.0, osl_pass=True)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "sweep"
    make_run(root / "c0001", 1, 100, 40)
    make_run(root / "c0002", 2, 150, 40)
    make_run(root / "c0004", 4, 300, 40)
    SweepPlan({}, [1, 2, 4], [SweepPoint(c, f"c{c:04d}", "done") for c in (1, 2, 4)]).write(root)
    return root


def test_per_user_speed_is_tokens_over_e2e(sweep: Path) -> None:
    points = load_points([("sys", sweep)], gates)
    assert [p.concurrency for p in points] == [1, 2, 4]
    # 12 turns × 40 tokens over 12 × 0.1 s of E2E
    assert points[0].per_user_tps == pytest.approx(12 * 40 / (12 * 0.1))
    assert points[2].per_user_tps == pytest.approx(40 / 0.3)
    assert points[2].accurate is False and points[0].cache_hit == pytest.approx(0.5)


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


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no chromium on this machine (Debian package `chromium`)")


def test_report_renders_in_headless_chromium(sweep: Path, tmp_path: Path) -> None:
    page = build_report([("sys", sweep), ("other", sweep / "c0002")], tmp_path / "r", gates_of=gates)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    url = page.resolve().as_uri()
    shot = tmp_path / "report.png"
    res = subprocess.run(
        [_chromium(), *flags, "--window-size=1200,1600", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 20_000, res.stderr[-2000:]
    dom = subprocess.run([_chromium(), *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert 'data-points="4"' in dom.stdout
    assert dom.stdout.count('<tr class="point">') == 4
    assert dom.stdout.count("data:image/png;base64,") >= 5
    console_errors = [
        line
        for line in (res.stderr + dom.stderr).splitlines()
        if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    assert console_errors == []
