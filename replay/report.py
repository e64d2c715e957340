"""`trajbench report`: turn runs and sweeps into the buyer's decision (docs/metrics.md).

Writes the Pareto step chart and per-concurrency charts (PNG), `points.csv` / `points.json` with
every number and its definition, and one self-contained `report.html` (images embedded, no
network). Given the same run folders it writes the same numbers.
"""

from __future__ import annotations

import base64
import csv
import html
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from traces import make_dir

from .errors import ReplayError
from .pareto import Point, frontier, normalised
from .plots import metric_chart, pareto_chart
from .points import GatesOf, load_points
from .runinfo import RunInfo

DEFINITIONS = {
    "label": "system name (--label NAME=DIR, default the folder name)",
    "concurrency": "simulated users (slots), each with at most one request in flight",
    "per_user_tps": "pooled per-user speed: Σ output tokens / Σ E2E seconds over window turns (docs/metrics.md)",
    "throughput_tps": "system output tokens/s over the performance window (docs/metrics.md)",
    "requests_per_s": "completed window turns per second",
    "ttft_p90_ms": "90th percentile time to first token, ms (observed value, numpy method=lower)",
    "cache_hit": "measured prefix-cache hit: Σ cached / Σ prompt tokens as the server reports them",
    "failed_turns": "turns that failed (HTTP error, broken stream, error object, timeout)",
    "issued_turns": "turns sent",
    "inline_score": "inline accuracy over all scored turns (docs/accuracy.md)",
    "inline_pass": "inline score meets the profile's threshold",
    "osl_mean": "mean output tokens per window turn (docs/accuracy.md)",
    "osl_pass": "OSL mean is inside the profile's band",
    "on_frontier": "the point is non-dominated among this system's accurate points",
    "per_dollar_hour": "throughput_tps / cost per hour (given --cost-per-hour)",
    "per_watt": "throughput_tps / power in watts (given --power-watts)",
}


def _rows(points: list[Point], cost: float | None, watts: float | None) -> list[dict[str, Any]]:
    on_front = {
        p.run_dir
        for label in {q.label for q in points}
        for p in frontier([q for q in points if q.label == label and q.accurate])
    }
    rows = []
    for p in points:
        row = {k: v for k, v in asdict(p).items() if k != "run_dir"}
        row["on_frontier"] = p.run_dir in on_front
        row.update(normalised(p.throughput_tps, cost_per_hour=cost, power_watts=watts))
        row["run"] = Path(p.run_dir).name
        rows.append(row)
    return rows


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1 else f"{v:,.1f}"
    return "—" if v is None else html.escape(str(v))


def _table(rows: list[dict[str, Any]], cols: list[str], css: str) -> str:
    head = "".join(f'<th title="{html.escape(DEFINITIONS.get(c, c))}">{html.escape(c)}</th>' for c in cols)
    body = "".join(f'<tr class="{css}">' + "".join(f"<td>{_fmt(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
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


def _configs(points: list[Point]) -> str:
    parts = []
    for p in points:
        run = RunInfo.read(p.run_dir).to_json()
        keep = {k: run[k] for k in _SHOWN_CONFIG}
        parts.append(
            f"<details><summary>{html.escape(p.label)} C={p.concurrency}</summary><pre>{html.escape(json.dumps(keep, indent=2, sort_keys=True))}</pre></details>"
        )
    return "".join(parts)


def build_report(
    inputs: list[tuple[str, Path]],
    out: Path,
    *,
    cost_per_hour: float | None = None,
    power_watts: float | None = None,
    gates_of: GatesOf | None = None,
) -> Path:
    """The report of the given (label, run or sweep folder) inputs; `gates_of` gives each point's
    accuracy verdicts (eval's; without it no point is marked failing)."""
    points = load_points(inputs, gates_of)
    make_dir(out, error=ReplayError)
    rows = _rows(points, cost_per_hour, power_watts)
    cols = [c for c in DEFINITIONS if any(c in r for r in rows)]
    with (out / "points.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=[*cols, "run"], extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    (out / "points.json").write_text(
        json.dumps({"definitions": {c: DEFINITIONS[c] for c in cols}, "points": rows}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    charts = [pareto_chart(points, out / "pareto.png")]
    if cost_per_hour:
        charts.append(
            pareto_chart(
                points,
                out / "pareto_per_dollar.png",
                y_label="output tok/s per $/h",
                y=lambda p: p.throughput_tps / cost_per_hour,
            )
        )
    if power_watts:
        charts.append(
            pareto_chart(
                points,
                out / "pareto_per_watt.png",
                y_label="output tok/s per W",
                y=lambda p: p.throughput_tps / power_watts,
            )
        )
    charts += [
        metric_chart(
            points, out / "throughput_vs_concurrency.png", lambda p: p.throughput_tps, "system throughput (tok/s)"
        ),
        metric_chart(points, out / "ttft_p90_vs_concurrency.png", lambda p: p.ttft_p90_ms, "TTFT p90 (ms)"),
        metric_chart(points, out / "per_user_vs_concurrency.png", lambda p: p.per_user_tps, "per-user speed (tok/s)"),
        metric_chart(points, out / "errors_vs_concurrency.png", lambda p: float(p.failed_turns), "failed turns"),
    ]
    if any(p.cache_hit is not None for p in points):
        charts.append(
            metric_chart(
                points, out / "cache_hit_vs_concurrency.png", lambda p: p.cache_hit, "measured prefix-cache hit"
            )
        )
    failing = [r for r in rows if r["inline_pass"] is False or r["osl_pass"] is False]
    hashes = sorted({RunInfo.read(p.run_dir).dataset.content_hash for p in points})
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>trajbench report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}img{{max-width:100%}}.charts img{{width:48%}}
.fail td{{background:#fde8e8}}.scroll{{overflow-x:auto}}</style></head>
<body data-points="{len(points)}">
<h1>trajbench report</h1>
<p>{len(points)} measured point(s) from {len({p.label for p in points})} system(s). Dataset manifest hash: <code>{html.escape(", ".join(hashes))}</code></p>
<h2>Throughput vs per-user speed</h2>
{_img(charts[0])}
<p>The frontier is a step function through measured points only (docs/metrics.md). Crosses fail an accuracy gate and do not count.</p>
<h2>Points</h2>
{_table(rows, [*cols, "run"], "point")}
<h2>Points failing an accuracy gate</h2>
{_table(failing, ["label", "concurrency", "inline_score", "inline_pass", "osl_mean", "osl_pass", "run"], "fail") if failing else "<p>None.</p>"}
<h2>Against concurrency</h2>
<div class="charts">{"".join(_img(c) for c in charts[1:])}</div>
<h2>Run configuration</h2>
{_configs(points)}
<h2>Definitions</h2>
<ul>{"".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in DEFINITIONS.items() if k in cols)}</ul>
</body></html>
"""
    (out / "report.html").write_text(page, encoding="utf-8")
    if not (out / "report.html").stat().st_size:
        raise ReplayError(f"{out}: could not write report.html")
    return out / "report.html"
