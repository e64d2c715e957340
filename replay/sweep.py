"""`replay sweep`: one full replay per concurrency into its own run folder, resumable.

The sweep folder holds `sweep.json` (the plan, the base configuration and each point's state,
rewritten atomically after every point) and one run folder per point (`c0001`, `c0004`, …). A
point whose run folder already holds `result_summary.json` is kept, so an interrupted sweep
resumes where it stopped. A point where every turn failed stops the sweep (`AllTurnsFailed`: the
endpoint broke, later points would measure nothing), and so does a point interrupted by Ctrl-C
(`RunInterrupted`); either is rerun on resume. Accuracy checks per point come from the caller (`after_point`), since
eval sits above replay.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable, Sequence

from .config import RunConfig
from .errors import AllTurnsFailed, ReplayError, RunInterrupted
from .points import SUMMARY_FILE, SWEEP_FILE
from .summary import Outcome

AfterPoint = Callable[[Path], None]
Echo = Callable[[str], None]


def parse_concurrencies(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise ReplayError(f"--concurrency {text!r}: expected a comma-separated list of integers like 1,2,4,8") from None
    if not values or values[0] < 1:
        raise ReplayError(f"--concurrency {text!r}: every value must be >= 1")
    if len(values) > 32:
        raise ReplayError(f"--concurrency {text!r}: at most 32 points")
    return values


def _write_plan(folder: Path, plan: dict) -> None:
    tmp = folder / f".{SWEEP_FILE}.tmp"
    tmp.write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, folder / SWEEP_FILE)


def _complete(outcome: Outcome) -> bool:
    return not (outcome.interrupted or outcome.all_failed)


async def run_sweep(
    base: RunConfig,
    concurrencies: Sequence[int],
    out: str | os.PathLike[str],
    *,
    after_point: AfterPoint | None = None,
    echo: Echo = print,
) -> Path:
    from .run import run_replay

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    plan_path = folder / SWEEP_FILE
    # through JSON, so a resumed sweep compares like with like (tuples come back as lists)
    base_json = json.loads(json.dumps({k: v for k, v in asdict(base).items() if k not in ("api_key", "out", "concurrency", "display", "skip_preflight")}))
    if plan_path.is_file():
        old = json.loads(plan_path.read_text("utf-8"))
        if old.get("base") != base_json:
            raise ReplayError(f"{folder}: holds a sweep with other settings; use another --out or the same options to resume it")
    plan = {"base": base_json, "concurrencies": list(concurrencies), "points": [{"concurrency": c, "dir": f"c{c:04d}", "status": "pending"} for c in concurrencies]}
    for point in plan["points"]:
        run_dir = folder / point["dir"]
        if (run_dir / SUMMARY_FILE).is_file() and _complete(Outcome.read(run_dir)):
            point["status"] = "done"
            echo(f"C={point['concurrency']}: kept (already done)")
            continue
        if run_dir.exists():
            shutil.rmtree(run_dir)  # an interrupted point is rerun from the start
        _write_plan(folder, plan)
        echo(f"C={point['concurrency']}: replaying …")
        point["status"] = "running"
        await run_replay(replace(base, concurrency=point["concurrency"], out=str(run_dir), workers=min(base.workers, point["concurrency"])))
        outcome = Outcome.read(run_dir)
        if outcome.interrupted:
            point["status"] = "interrupted"
            _write_plan(folder, plan)
            raise RunInterrupted(f"C={point['concurrency']} was interrupted; the sweep stopped (rerun the same command to resume from this point)")
        if outcome.all_failed:
            point["status"] = "failed"
            _write_plan(folder, plan)
            raise AllTurnsFailed(f"C={point['concurrency']}: {outcome.failure(run_dir)}; the sweep stopped here (rerun the same command to resume from this point)")
        if after_point is not None:
            after_point(run_dir)
        point["status"] = "done"
        _write_plan(folder, plan)
    _write_plan(folder, plan)
    return folder
