"""Reading measured points from run folders and sweep folders (the inputs of a report).

A run folder holds `run.json` and `result_summary.json` (replay), and where eval ran,
`scores.json` (inline accuracy) and `osl.json` (the OSL gate). A sweep folder holds
`sweep.json` listing its run folders. Only these files are read, so a report is reproducible
from the folders alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ReplayError
from .pareto import Point
from .rollup import pct_key
from .summary import OURS, SUMMARY_FILE

SWEEP_FILE = "sweep.json"


def _json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ReplayError(f"{path}: not valid JSON ({exc})") from None


def load_point(run_dir: Path, label: str) -> Point:
    summary = _json(run_dir / SUMMARY_FILE)
    run = _json(run_dir / "run.json")
    if summary is None or run is None:
        raise ReplayError(f"{run_dir}: not a finished run (needs run.json and {SUMMARY_FILE}); rerun or resume it")
    scores = _json(run_dir / "scores.json") or {}
    osl = _json(run_dir / "osl.json") or {}
    ours = summary.get(OURS)
    if not isinstance(ours, dict):
        raise ReplayError(f"{run_dir}/{SUMMARY_FILE}: written by an older trajbench (no {OURS!r} section); rerun the point")
    ttft90 = ours["ttft"]["percentiles"].get(pct_key(90))
    turns = ours["turns"]["window"]
    return Point(
        label=label,
        run_dir=str(run_dir),
        concurrency=int(run["concurrency"]),
        per_user_tps=float(ours["interactivity"]["e2e_interactivity"]),
        throughput_tps=float(ours["throughput"]["output_tokens_per_s"]),
        requests_per_s=float(ours["throughput"]["requests_per_s"]),
        ttft_p90_ms=None if ttft90 is None else ttft90 / 1e6,
        cache_hit=ours["cached_tokens"]["hit_rate"],
        failed_turns=int(turns["failed"] + turns["aborted"]),
        issued_turns=int(turns["sent"] + turns["aborted"]),
        inline_score=scores.get("score"),
        inline_pass=scores.get("passed"),
        osl_mean=(osl.get("window") or {}).get("mean"),
        osl_pass=osl.get("passed"),
    )


def run_dirs(folder: Path) -> list[Path]:
    """The run folders of a sweep folder, or the folder itself when it is one run."""
    sweep = _json(folder / SWEEP_FILE)
    if sweep is not None:
        # an interrupted point has a summary too, of a partial run: not a point of the curve
        return [folder / p["dir"] for p in sweep["points"] if p.get("status", "done") == "done" and (folder / p["dir"] / SUMMARY_FILE).is_file()]
    if (folder / SUMMARY_FILE).is_file():
        return [folder]
    raise ReplayError(f"{folder}: neither a run folder ({SUMMARY_FILE}) nor a sweep folder ({SWEEP_FILE})")


def load_points(inputs: list[tuple[str, Path]]) -> list[Point]:
    points = [load_point(d, label) for label, folder in inputs for d in run_dirs(folder)]
    if not points:
        raise ReplayError("no finished runs in the given folders")
    return sorted(points, key=lambda p: (p.label, p.concurrency, p.run_dir))
