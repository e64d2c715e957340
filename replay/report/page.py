"""`trajbench report`: turn runs and sweeps into the buyer's decision (docs/metrics.md).

Writes the Pareto step chart and per-concurrency charts (PNG), `points.csv` / `points.json` with
every number and its definition (machine keys), and one self-contained `report.html` (images
embedded, no network) that a person reads: human column names, the server's settings per system,
and a visible warning for anything that makes numbers incomparable or unofficial (points of
different datasets, research gates, a simulated target). Given the same run folders it writes
the same bytes.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from traces import make_dir

from ..errors import ReplayError
from ..results import REPORT_PAGE, RunInfo, Slo
from .pareto import Point, frontier, normalised
from .plots import curves, metric_chart, pareto_chart
from .points import GatesOf, PointSet, Replaced, collect_points

#: Every column of points.csv / points.json: (machine key, human name, definition).
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("label", "System", "system name (--label NAME=DIR[,DIR…], default the folder name)"),
    ("concurrency", "Concurrency (users)", "simulated users (slots), each with at most one request in flight"),
    (
        "per_user_tps",
        "Per-user speed (tok/s)",
        "pooled per-user speed: Σ output tokens / Σ E2E seconds over window turns (docs/metrics.md)",
    ),
    ("throughput_tps", "Throughput (tok/s)", "system output tokens/s over the performance window (docs/metrics.md)"),
    ("requests_per_s", "Requests/s", "completed window turns per second"),
    (
        "goodput_tps",
        "Goodput (tok/s)",
        "output tokens/s of the window turns that met the run's SLO (--slo), over the throughput's window (docs/metrics.md)",
    ),
    (
        "session_goodput_tps",
        "Session goodput (tok/s)",
        "output tokens/s of the sessions that met the run's SLOs (--session-slo, --slo) in full (docs/metrics.md)",
    ),
    ("ttft_p50_ms", "TTFT p50 (ms)", "median time to first token, ms (observed value, numpy method=lower)"),
    ("ttft_p90_ms", "TTFT p90 (ms)", "90th percentile time to first token, ms (observed value, numpy method=lower)"),
    ("ttft_p99_ms", "TTFT p99 (ms)", "99th percentile time to first token, ms (observed value, numpy method=lower)"),
    ("tpot_p50_ms", "TPOT p50 (ms)", "median time per output token after the first chunk, ms (docs/metrics.md)"),
    ("tpot_p90_ms", "TPOT p90 (ms)", "90th percentile time per output token after the first chunk, ms"),
    (
        "cache_hit",
        "Prefix-cache hit",
        "measured prefix-cache hit: Σ cached / Σ prompt tokens as the server reports them",
    ),
    ("failed_turns", "Failed turns", "turns that failed (HTTP error, broken stream, error object, timeout)"),
    ("issued_turns", "Issued turns", "turns sent"),
    ("inline_score", "Inline score", "inline accuracy over all scored turns (docs/accuracy.md)"),
    ("inline_pass", "Inline gate", "inline score meets the threshold of the point's gates"),
    ("osl_mean", "OSL mean (tok/turn)", "mean output tokens per window turn (docs/accuracy.md)"),
    ("osl_pass", "OSL gate", "OSL mean is inside the band of the point's gates"),
    (
        "gates",
        "Gates",
        "official, or the research gates that judged the point (dataset, off): never an official result (docs/accuracy.md)",
    ),
    ("target", "Target", "real inference server, or trajbench's simulator (never an official point)"),
    ("started_at", "Started", "when the run started (run.json); the latest run at a concurrency is the point"),
    ("on_frontier", "On frontier", "the point is non-dominated among its system's accurate points of the same gates"),
    ("per_dollar_hour", "Tok/s per $/h", "throughput_tps / cost per hour (given --cost-per-hour)"),
    ("per_watt", "Tok/s per W", "throughput_tps / power in watts (given --power-watts)"),
)
DEFINITIONS = {key: definition for key, _, definition in COLUMNS}
HEADERS = {key: name for key, name, _ in COLUMNS} | {"run": "Run folder"}

_PERCENT = frozenset({"cache_hit", "inline_score"})
_GATE = frozenset({"inline_pass", "osl_pass"})
_GOODPUT = frozenset({"goodput_tps", "session_goodput_tps"})
#: The columns of the second table of points (their verdicts and where they come from); the
#: first holds the measured numbers.
_STATUS = (
    "inline_score",
    "inline_pass",
    "osl_mean",
    "osl_pass",
    "gates",
    "target",
    "on_frontier",
    "started_at",
)


def _rows(points: list[Point], cost: float | None, watts: float | None) -> list[dict[str, Any]]:
    on_front = {p.run_dir for pts in curves(points).values() for p in frontier([q for q in pts if q.accurate])}
    rows = []
    for p in points:
        # goodput columns only for points whose run had an SLO: a report of runs without shows none
        row = {k: v for k, v in asdict(p).items() if k != "run_dir" and not (k in _GOODPUT and v is None)}
        row["on_frontier"] = p.run_dir in on_front
        row.update(normalised(p.throughput_tps, cost_per_hour=cost, power_watts=watts))
        row["run"] = Path(p.run_dir).name
        rows.append(row)
    return rows


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def _fmt(key: str, v: Any) -> str:
    """A cell as a person reads it: thousands separated, shares as percentages, verdicts as words."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return ("pass" if v else "FAIL") if key in _GATE else ("yes" if v else "no")
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if key in _PERCENT:
            return f"{100 * v:.2f}%"
        return f"{v:,.1f}" if abs(v) >= 1 or v == 0 else f"{v:,.3g}"
    return html.escape(str(v))


def _table(rows: list[dict[str, Any]], cols: list[str], css: str) -> str:
    head = "".join(
        f'<th title="{html.escape(DEFINITIONS.get(c, c))}" data-key="{c}">{html.escape(HEADERS.get(c, c))}</th>'
        for c in cols
    )
    body = "".join(
        f'<tr class="{css}">' + "".join(f"<td>{_fmt(c, r.get(c))}</td>" for c in cols) + "</tr>" for r in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


_SHOWN_CONFIG = (
    "profile",
    "model",
    "request_params",
    "target",
    "endpoint",
    "concurrency",
    "workers",
    "num_trajectories",
    "inject_delays",
    "stop_issuing_on_first_user_complete",
    "salt",
    "history_marker",
    "dataset",
)


def _configs(points: list[Point], infos: dict[str, RunInfo]) -> str:
    parts = []
    for p in points:
        run = infos[p.run_dir].to_json()
        keep = {k: run[k] for k in _SHOWN_CONFIG}
        parts.append(
            f"<details><summary>{html.escape(p.label)} C={p.concurrency:,}</summary><pre>{html.escape(json.dumps(keep, indent=2, sort_keys=True))}</pre></details>"
        )
    return "".join(parts)


def _settings_of(info: RunInfo) -> dict[str, str]:
    """What a reader needs to know of the server a point measured, from its run.json."""
    pre = info.preflight
    served = (
        "not checked (--skip-preflight)"
        if pre is None or not pre.checked
        else ", ".join(pre.served_models or []) or "none listed"
    )
    keep_alive = {True: "yes", False: "no: a connection per request", None: "not checked"}[
        pre.keep_alive if pre is not None else None
    ]
    target = info.target + (f" ({info.target_evidence})" if info.target_evidence else "")
    return {
        "Endpoint": info.endpoint,
        "Target": target,
        "Model (as requested)": info.model,
        "Served models (preflight)": served,
        "Keeps connections alive": keep_alive,
        "Profile": info.profile,
        "Request parameters": ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(info.request_params.items()))
        or "none",
        "Dataset": f"{info.dataset.name} ({info.dataset.content_hash[:16]}…)",
        "Salt / history marker": f"{info.salt} / {'on' if info.history_marker else 'off'}",
        "Recorded delays": "injected" if info.inject_delays else "skipped (not official)",
        "Workers": f"{info.workers:,}",
        "trajbench": info.trajbench_version,
    }


def _settings(points: list[Point], infos: dict[str, RunInfo]) -> str:
    """One column per system; a setting that differs between a system's points lists each
    value with the concurrencies that used it."""
    systems: dict[str, dict[str, dict[str, list[int]]]] = {}
    for p in points:
        for key, value in _settings_of(infos[p.run_dir]).items():
            systems.setdefault(p.label, {}).setdefault(key, {}).setdefault(value, []).append(p.concurrency)
    keys = list(next(iter(systems.values())))

    def cell(values: dict[str, list[int]]) -> str:
        if len(values) == 1:
            return html.escape(next(iter(values)))
        return "<br>".join(
            f"{html.escape(v)} (C={', '.join(f'{c:,}' for c in cs)})" for v, cs in sorted(values.items())
        )

    head = "<th>Setting</th>" + "".join(f"<th>{html.escape(label)}</th>" for label in systems)
    body = "".join(
        f"<tr><th>{html.escape(k)}</th>" + "".join(f"<td>{cell(s[k])}</td>" for s in systems.values()) + "</tr>"
        for k in keys
    )
    return (
        f'<div class="scroll"><table class="settings"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )


def _warnings(points: list[Point], replaced: list[Replaced]) -> str:
    """Everything that makes the numbers incomparable or unofficial, before any number."""
    out = []
    hashes: dict[str, set[str]] = {}
    for p in points:
        hashes.setdefault(p.dataset_hash, set()).add(p.label)
    if len(hashes) > 1:
        which = "; ".join(
            f"<code>{html.escape(h[:16])}…</code>: {html.escape(', '.join(sorted(labels)))}"
            for h, labels in sorted(hashes.items())
        )
        out.append(
            '<div class="warn" id="dataset-warning"><b>Warning: these points come from different datasets</b> '
            f"(manifest content hashes {which}). Numbers measured on different datasets are not comparable "
            "(docs/metrics.md).</div>"
        )
    notes = sorted({(p.label, p.gates_note) for p in points if p.research})
    for label, note in notes:
        out.append(
            f'<div class="warn research"><b>{html.escape(label)}: {html.escape(note)}</b>. Its points were judged '
            "by research gates, not the benchmark's; they draw their own dashed frontier (docs/accuracy.md).</div>"
        )
    simulated = sorted({p.label for p in points if p.target != "real"})
    if simulated:
        out.append(
            f'<div class="warn simulated"><b>{html.escape(", ".join(simulated))}: measured against trajbench\'s '
            "simulator</b>, not a real inference server; never an official result.</div>"
        )
    if replaced:
        items = "".join(
            f"<li>{html.escape(r.label)} C={r.concurrency:,}: {html.escape(r.run_dir)} (started {html.escape(r.started_at)}) "
            f"replaced by the later {html.escape(r.by)}</li>"
            for r in replaced
        )
        out.append(
            f'<div class="note">{len(replaced):,} earlier run(s) replaced by a later run of the same system at the '
            f"same concurrency:<ul>{items}</ul></div>"
        )
    return "\n".join(out)


def build_report(
    inputs: list[tuple[str, Path]],
    out: Path,
    *,
    cost_per_hour: float | None = None,
    power_watts: float | None = None,
    gates_of: GatesOf | None = None,
) -> Path:
    """The report of the given (label, run or sweep folder) inputs; one label may name several
    folders (the latest run at each concurrency is its point). `gates_of` gives each point's
    accuracy verdicts (eval's; without it no point is marked failing)."""
    found = collect_points(inputs, gates_of)
    make_dir(out, error=ReplayError)
    # every file is made in a staging folder and moved in at the end, report.html last: a failure
    # (a chart that cannot be drawn, a full disk) leaves the previous report whole
    with tempfile.TemporaryDirectory(prefix=".report-", dir=out) as tmp:
        stage = Path(tmp)
        _write_report(found, stage, cost_per_hour, power_watts)
        for made in sorted(stage.iterdir(), key=lambda f: f.name == REPORT_PAGE):
            os.replace(made, out / made.name)
    return out / REPORT_PAGE


def _write_report(found: PointSet, out: Path, cost_per_hour: float | None, power_watts: float | None) -> None:
    points = found.points
    infos = {p.run_dir: RunInfo.read(p.run_dir) for p in points}
    rows = _rows(points, cost_per_hour, power_watts)
    cols = [c for c in DEFINITIONS if any(c in r for r in rows)]
    with (out / "points.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=[*cols, "run"], extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    (out / "points.json").write_text(
        json.dumps(
            {
                "definitions": {c: DEFINITIONS[c] for c in cols},
                "points": rows,
                "replaced": [asdict(r) for r in found.replaced],
            },
            indent=2,
            sort_keys=True,
        )
        + "\n",
        encoding="utf-8",
    )
    charts = _charts(points, out, cost_per_hour, power_watts)
    goodput_charts = _goodput_charts(points, infos, out)
    failing = [r for r in rows if r["inline_pass"] is False or r["osl_pass"] is False]
    hashes = sorted({p.dataset_hash for p in points})
    # two tables, so each fits a 1280-pixel screen without scrolling sideways: the numbers, then
    # the verdicts (points.csv and points.json keep every column in one row)
    measured = ["label", "concurrency", *(c for c in cols if c not in _STATUS and c not in ("label", "concurrency"))]
    status = ["label", "concurrency", *(c for c in _STATUS if c in cols), "run"]
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>trajbench report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 5px;text-align:right}}th{{background:#f4f4f4;font-size:12px}}table.settings td,table.settings th{{text-align:left}}
img{{max-width:100%}}.charts img{{width:48%}}.fail td{{background:#fde8e8}}.scroll{{overflow-x:auto}}
.warn{{border:2px solid #d62728;background:#fff1f0;padding:8px 12px;margin:10px 0}}.research{{border-color:#e68a00;background:#fff8e6}}
.note{{border:1px solid #999;background:#f7f7f7;padding:6px 12px;margin:10px 0}}</style></head>
<body data-points="{len(points)}">
<h1>trajbench report</h1>
<p>{len(points):,} measured point(s) from {len({p.label for p in points}):,} system(s). Dataset manifest hash: <code>{html.escape(", ".join(hashes))}</code></p>
{_warnings(points, found.replaced)}
<h2>Throughput vs per-user speed</h2>
{_img(charts[0])}
<p>The frontier is a step function through measured points only (docs/metrics.md). Crosses fail an accuracy gate and do not count. A dashed curve is judged by research gates: not an official result (docs/accuracy.md).</p>
{_goodput_section(goodput_charts)}
<h2>Points</h2>
{_table(rows, measured, "point")}
<h3>Accuracy and status of each point</h3>
{_table(rows, status, "status")}
<h2>Points failing an accuracy gate</h2>
{_table(failing, ["label", "concurrency", "gates", "inline_score", "inline_pass", "osl_mean", "osl_pass", "run"], "fail") if failing else "<p>None.</p>"}
<h2>Against concurrency</h2>
<div class="charts">{"".join(_img(c) for c in charts[1:])}</div>
{_cache_section(points)}<h2>Server settings</h2>
{_settings(points, infos)}
<h2>Run configuration</h2>
{_configs(points, infos)}
<h2>Definitions</h2>
<ul>{"".join(f"<li><b>{html.escape(HEADERS[k])}</b> (<code>{k}</code>): {html.escape(v)}</li>" for k, v in DEFINITIONS.items() if k in cols)}</ul>
</body></html>
"""
    (out / REPORT_PAGE).write_text(page, encoding="utf-8")


def _attribute(key: str) -> Callable[[Point], float]:
    return lambda p: float(getattr(p, key))


def judged_by(slo: Slo, key: str) -> str:
    """The limits a goodput is judged by, in words: turn goodput (`goodput_tps`) by the per-turn
    limits only, since a session limit changes no turn's verdict; session goodput by all of them."""
    if key == "goodput_tps":
        slo = Slo(ttft_ms=slo.ttft_ms, tpot_ms=slo.tpot_ms)
    return slo.describe()


def goodput_points(points: list[Point], infos: Mapping[str, RunInfo], key: str) -> list[Point]:
    """The points that have this goodput. Goodput under other limits does not compare, so when
    their runs were judged by different limits (`judged_by`) each one's points form a curve of
    their own (the limits join the label a frontier is drawn per); one set keeps the labels as
    they are."""
    have = [p for p in points if getattr(p, key) is not None]
    slos = {p.run_dir: judged_by(infos[p.run_dir].slo or Slo(), key) for p in have}
    if len(set(slos.values())) <= 1:
        return have
    return [replace(p, label=f"{p.label} (SLO {slos[p.run_dir]})") for p in have]


def _goodput_charts(points: list[Point], infos: Mapping[str, RunInfo], out: Path) -> list[Path]:
    """The Pareto chart with goodput as its y-axis (of turns, of sessions), over the points whose
    run had an SLO, one frontier per system and SLO; none when no point had one."""
    charts = []
    for key, name, file in (
        ("goodput_tps", "goodput of turns", "pareto_goodput.png"),
        ("session_goodput_tps", "goodput of sessions", "pareto_session_goodput.png"),
    ):
        have = goodput_points(points, infos, key)
        if have:
            charts.append(
                pareto_chart(
                    have,
                    out / file,
                    y_label=f"{name} (output tok/s within the SLO)",
                    y=_attribute(key),
                    title=f"{name[0].upper()}{name[1:]} vs per-user speed (measured points, step frontier)",
                )
            )
    return charts


def _goodput_section(charts: list[Path]) -> str:
    if not charts:
        return ""
    return (
        '<h2 id="goodput">Goodput vs per-user speed</h2>\n'
        + "".join(_img(c) for c in charts)
        + "\n<p>The same frontier with goodput as the y-axis: only the output tokens of turns (and of whole "
        "sessions) that met the run's SLOs count; points judged by different SLOs never share a frontier, "
        "each SLO draws its own, named in the legend (turn goodput by the per-turn limits only: a session limit "
        "changes no turn's verdict) (docs/metrics.md).</p>"
    )


def _cache_section(points: list[Point]) -> str:
    """The cache deficit of every point whose run folder holds a cache_analysis.json
    (`trajbench analyze cache`, docs/cache.md): its causes and its plots."""
    from ..cacheobs import CHARTS, CacheAnalysis

    parts = []
    for p in sorted(points, key=lambda p: (p.label, p.concurrency)):
        if not CacheAnalysis.exists(p.run_dir):
            continue
        a = CacheAnalysis.read(p.run_dir)
        causes = ", ".join(f"{c.cause} {c.share:.1%}" for c in a.causes if c.deficit_tokens)
        parts.append(
            f"<h3>{html.escape(p.label)} C={p.concurrency:,}</h3><p>{a.cached_tokens:,} of {a.ideal_tokens:,} "
            f"ideal reusable tokens cached ({a.hit_rate_of_ideal:.1%}) over {a.turns:,} turns, block "
            f"{a.block_size} ({html.escape(a.block_size_source)}); deficit by cause: {html.escape(causes or 'none')}"
            + (
                f"; template check {html.escape(a.template_check)} covered {a.template_check_turns:,} turns"
                if a.template_check is not None
                else ""
            )
            + (
                f"; measured against trajbench's simulator, counted as {html.escape(a.tokenizer)}: the simulator's "
                "cache, not an engine's"
                if a.simulated
                else ""
            )
            + "</p>"
        )
        imgs = [Path(p.run_dir) / name for name in CHARTS if (Path(p.run_dir) / name).is_file()]
        parts.append(f'<div class="charts">{"".join(_img(i) for i in imgs)}</div>')
    if not parts:
        return ""
    return (
        "<h2>Prefix-cache deficit</h2>\n<p>Why turns missed the cache, one cause each (docs/cache.md).</p>\n"
        + "\n".join(parts)
        + "\n"
    )


def _charts(points: list[Point], out: Path, cost_per_hour: float | None, power_watts: float | None) -> list[Path]:
    """The Pareto chart first (and its per-dollar and per-watt forms), then metrics against concurrency."""
    charts = [pareto_chart(points, out / "pareto.png")]
    if cost_per_hour:
        charts.append(
            pareto_chart(
                points,
                out / "pareto_per_dollar.png",
                y_label="output tok/s per $/h",
                y=lambda p: p.throughput_tps / cost_per_hour,
                title="Throughput per dollar-hour vs per-user speed",
            )
        )
    if power_watts:
        charts.append(
            pareto_chart(
                points,
                out / "pareto_per_watt.png",
                y_label="output tok/s per W",
                y=lambda p: p.throughput_tps / power_watts,
                title="Throughput per watt vs per-user speed",
            )
        )
    charts += [
        metric_chart(
            points,
            out / "throughput_vs_concurrency.png",
            lambda p: p.throughput_tps,
            "system throughput (tok/s)",
            title="System throughput",
            tokens=True,
        ),
        metric_chart(
            points, out / "ttft_p90_vs_concurrency.png", lambda p: p.ttft_p90_ms, "TTFT p90 (ms)", title="TTFT p90"
        ),
        metric_chart(
            points, out / "tpot_p90_vs_concurrency.png", lambda p: p.tpot_p90_ms, "TPOT p90 (ms)", title="TPOT p90"
        ),
        metric_chart(
            points,
            out / "per_user_vs_concurrency.png",
            lambda p: p.per_user_tps,
            "per-user speed (tok/s)",
            title="Per-user speed",
            tokens=True,
        ),
        metric_chart(
            points,
            out / "errors_vs_concurrency.png",
            lambda p: float(p.failed_turns),
            "failed turns",
            title="Failed turns",
            counts=True,
        ),
    ]
    if any(p.cache_hit is not None for p in points):
        charts.append(
            metric_chart(
                points,
                out / "cache_hit_vs_concurrency.png",
                lambda p: p.cache_hit,
                "measured prefix-cache hit",
                title="Measured prefix-cache hit",
            )
        )
    return charts
