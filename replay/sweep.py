"""`replay sweep`: one full replay per concurrency into its own run folder, resumable.

The sweep folder holds `sweep.json` (the plan, the base configuration and each point's status,
rewritten atomically whenever a status changes) and one run folder per point (`c0001`, `c0004`,
…). A point's status is `pending`, `running`, `done`, `interrupted` or `failed`. Rerunning the
same command resumes: `done` points whose run finished are kept, every other point is rerun
from the start (its partial folder removed); a longer list extends the sweep, a list that would
drop one of its points is refused. `--add` extends it by only the concurrencies given: those it
lacks are run (those it has are kept, or rerun when unfinished) and every other point is kept
as it is.

SIGINT or SIGTERM stops the whole sweep: the running point drains (as `replay run` does) and is
marked `interrupted`, no further point starts, and `run_sweep` raises `Interrupted` (the CLI
exits 130 or 143). A second signal cancels the drain. A point where every turn failed stops the
sweep too (`AllTurnsFailed`, exit 3): the endpoint broke and later points would measure nothing.
Accuracy checks per point come from the caller (`after_point`), since eval sits above replay; it
runs in a thread, so the event loop (the sweep's signal handling) stays free while a point is
scored. As each point finishes its headline numbers are echoed, and a table of every point ends
the sweep (`sweep_table`).

The sweep folder must be new, empty or a sweep folder, and a point folder is only ever removed
when it is a run folder (`run.json`) or empty: `--out` never deletes files trajbench did not write.
A sweep holds its folder's lock from start to end (`replay.results.lock`): a second sweep on the
same `--out` is refused with the first one's PID, and so is a point folder another run writes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import traces
from traces import Option, make_dir

from .config import RUN_OPTIONS, RunConfig
from .errors import AllTurnsFailed, Interrupted, ReplayError, UsageProblem
from .results import LOCK_FILE, RUN_FILE, SWEEP_FILE

# What runs a sweep (the results' files and locks, the loop, the report) is imported by the
# functions that use it: the sweep's options (SWEEP_RUN_OPTIONS) build the command line, and
# `trajbench --help` should not load pyarrow, numpy and httpx to print it.

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


def _concurrency_list(raw: Any) -> str:
    """A file's concurrencies: 8, [1, 2, 4] or "1,2,4" (as --concurrency takes them)."""
    if isinstance(raw, list) and raw and all(isinstance(v, int) and not isinstance(v, bool) for v in raw):
        return ",".join(map(str, raw))
    if isinstance(raw, (int, str)) and not isinstance(raw, bool):
        return str(raw)
    raise ValueError(f"expected a concurrency or a list of them, e.g. [1, 2, 4, 8], found {json.dumps(raw)[:60]}")


#: `replay sweep`'s own options, in place of `replay run`'s --concurrency and --out.
SWEEP_OPTIONS = (
    Option(
        "concurrency",
        "Comma-separated concurrencies, e.g. 1,2,4,8,16.",
        short="-c",
        excludes=("regions",),
        read=_concurrency_list,
    ),
    Option(
        "regions",
        "Place 7 points (1 + 3 + 3) in the Endpoints rules' four concurrency regions up to --max-concurrency: "
        "1, then each region's middle and end, so every region has its mandatory point (docs/submitting.md).",
        type=bool,
        default=False,
        excludes=("concurrency",),
    ),
    Option(
        "max-concurrency",
        "Top of --regions: C_max, the highest concurrency measured, which sets the regions.",
        type=int,
        default=64,
        minimum=1,
    ),
    Option("out", "Sweep folder; rerun the same command to resume it.", kind="dir", required=True, recorded=False),
    Option(
        "add",
        "Add points to the existing sweep in --out: run only the concurrencies it lacks, keep the rest.",
        type=bool,
        default=False,
    ),
)
#: Every option of `replay sweep` (but the jobs' --gates), in `--help` order.
SWEEP_RUN_OPTIONS = (*(o for o in RUN_OPTIONS if o.key not in ("concurrency", "out")), *SWEEP_OPTIONS)


def sweep_levels(values: Mapping[str, Any]) -> list[int]:
    """The concurrencies a sweep's settled options ask for: --concurrency's list or --regions."""
    if values["regions"] == (values["concurrency"] is not None):
        raise UsageProblem("give exactly one of --concurrency LIST or --regions")
    if values["regions"]:
        from .report import region_concurrencies

        return region_concurrencies(values["max_concurrency"])
    return parse_concurrencies(values["concurrency"])


#: The option that sets a base setting of sweep.json, where it is not `--` + the key with dashes.
_OPTION_OF = {
    "shards": "SHARDS_DIR",
    "inject_delays": "--no-delays",
    "num_trajectories": "--trajectories",
    "headers": "--header/--no-session-header",
    "sim": "--sim-args",
    "limits": "--max-response-mb/--memory-budget-mb/--max-event-mb/--max-header-kb",
    "slo": "--slo/--session-slo",
}


def settings_differ(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Each base setting whose value in a sweep's plan (`old`) differs from this command's (`new`),
    named by the option that sets it, with both values: what a user must change to resume."""

    def shown(value: Any) -> str:
        text = "unset" if value is None else json.dumps(value, sort_keys=True)
        return text if len(text) <= 60 else text[:57] + "..."

    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        option = _OPTION_OF.get(key, "--" + key.replace("_", "-"))
        if isinstance(a, dict) and isinstance(b, dict):  # name the piece that differs (the simulator's step model, …)
            parts = [
                f"{k} {shown(a.get(k))} in the sweep, {shown(b.get(k))} here"
                for k in sorted(set(a) | set(b))
                if a.get(k) != b.get(k)
            ]
            out.append(f"{option} ({', '.join(parts)})")
        else:
            out.append(f"{option} ({key} {shown(a)} in the sweep, {shown(b)} here)")
    return out


def _check_folder(folder: Path) -> None:
    """A sweep writes into a new or empty folder, or resumes its own."""
    from .results import refuse_if_in_use

    if folder.exists() and not folder.is_dir():
        raise ReplayError(f"--out {folder}: is a file; pass a folder for the sweep")
    if folder.is_dir():
        refuse_if_in_use(folder, "sweep")
    if (
        folder.is_dir()
        and not (folder / SWEEP_FILE).is_file()
        and any(child.name != LOCK_FILE for child in folder.iterdir())
    ):
        raise ReplayError(
            f"--out {folder}: holds files but no {SWEEP_FILE}, so it is not a sweep to resume; choose a new --out"
        )


def _clear_point(run_dir: Path) -> None:
    """Remove a point's unfinished run folder before it is rerun: only a run folder or an empty one."""
    from .results import refuse_if_in_use

    if not (run_dir.exists() or run_dir.is_symlink()):
        return
    if run_dir.is_dir() and not run_dir.is_symlink():
        refuse_if_in_use(run_dir)  # a `replay run --out` into this point, still writing it
    if run_dir.is_dir() and not run_dir.is_symlink() and ((run_dir / RUN_FILE).is_file() or not any(run_dir.iterdir())):
        shutil.rmtree(run_dir)
        return
    raise ReplayError(
        f"{run_dir}: in the way of this sweep's point but not a run folder (no {RUN_FILE}); move it away or choose another --out"
    )


async def run_sweep(
    base: RunConfig,
    concurrencies: Sequence[int],
    out: str | os.PathLike[str],
    *,
    after_point: AfterPoint | None = None,
    echo: Echo = print,
    add: bool = False,
) -> Path:
    """Run (or resume) the sweep; returns its folder. Raises `Interrupted` when a signal
    stopped it (after writing sweep.json). `add`: extend the existing sweep in `out` by the
    concurrencies it lacks, running only those (its other points are kept as they are)."""
    from .results import SweepPlan, folder_lock

    folder = Path(out)
    if add and not SweepPlan.exists(folder):
        raise ReplayError(
            f"--add {folder}: no {SWEEP_FILE} there, so there is no sweep to add points to; start the sweep without --add"
        )
    # a bad option is told before the sweep folder exists (--workers against the largest point)
    replace(base, concurrency=max(concurrencies, default=1)).check()
    _check_folder(folder)
    traces.Shards(base.shards)  # not shards (a trace file given by mistake): say so before making the folder
    make_dir(folder, error=ReplayError)
    with folder_lock(folder, "sweep"):  # one sweep at a time in a folder, from here to its end
        return await _run_sweep(base, concurrencies, folder, after_point=after_point, echo=echo, add=add)


async def _run_sweep(
    base: RunConfig,
    concurrencies: Sequence[int],
    folder: Path,
    *,
    after_point: AfterPoint | None,
    echo: Echo,
    add: bool,
) -> Path:
    import asyncio

    from .loop import Interrupt
    from .report import point_line, read_numbers, sweep_table
    from .results import RunOutcome, SweepPlan, SweepPoint
    from .run import run_replay

    # through JSON, so a resumed sweep compares like with like (tuples come back as lists)
    base_json = json.loads(
        json.dumps(
            {
                k: v
                for k, v in traces.to_json(base).items()
                if k
                not in ("api_key", "api_key_env", "out", "concurrency", "progress", "skip_preflight", "extra_options")
                and not (k == "slo" and not base.slo.given)  # a sweep without an SLO reads as before SLOs
                and not (k == "flush_cache" and not base.flush_cache)  # nor one without --flush-cache
                and not (k == "failure_budget" and not base.failure_budget)  # likewise without a budget
            }
        )
    )
    wanted = sorted(set(concurrencies))
    before: dict[str, str] = {}
    points = [SweepPoint(c, f"c{c:04d}", "pending") for c in wanted]
    if SweepPlan.exists(folder):
        try:
            old = SweepPlan.read(folder)
        except traces.ContractError as exc:
            raise ReplayError(f"{exc}; choose a new --out") from None
        if old.base != base_json:
            raise ReplayError(
                f"{folder}: holds a sweep with other settings: {'; '.join(settings_differ(old.base, base_json))}; "
                "give the sweep's options to resume it or add points (--add), or choose another --out"
            )
        have = sorted(p.concurrency for p in old.points)
        if add:  # the old points as they are, then the missing ones
            points = sorted(
                [*old.points, *(p for p in points if p.concurrency not in have)], key=lambda p: p.concurrency
            )
        elif dropped := [c for c in have if c not in wanted]:
            missing = ",".join(str(c) for c in wanted if c not in have)
            raise ReplayError(
                f"{folder}: holds a sweep of concurrencies {','.join(map(str, have))}; this list would drop the "
                f"finished or planned point(s) {','.join(map(str, dropped))} from it: give a list with every one of "
                "them to resume or extend it"
                + (f", or pass --add to run only the missing {missing}" if missing else "")
            )
        before = {p.dir: p.status for p in old.points}
    plan = SweepPlan(base_json, [p.concurrency for p in points], points)
    interrupt = Interrupt()
    stopped_at: SweepPoint | None = None

    def mark(k: int, status: str) -> None:
        """Set point k's status and write the plan, so a resumed sweep sees it."""
        plan.points[k] = replace(plan.points[k], status=status)
        plan.write(folder)

    with interrupt.installed():
        for k, point in enumerate(plan.points):
            run_dir = folder / point.dir
            if point.concurrency not in wanted:  # --add: a point of the sweep this command did not ask for
                continue
            if RunOutcome.read(run_dir).complete and before.get(point.dir, "done") == "done":
                plan.points[k] = replace(point, status="done")
                echo(f"C={point.concurrency}: kept (already done)")
                continue
            if interrupt.requested:  # a signal between points: stop before the next one
                break
            _clear_point(run_dir)  # an unfinished point is rerun from the start
            mark(k, "running")
            echo(f"C={point.concurrency}: replaying …")
            try:
                await run_replay(
                    replace(
                        base,
                        concurrency=point.concurrency,
                        out=str(run_dir),
                        workers=min(base.workers, point.concurrency),
                        min_workers=min(base.min_workers, point.concurrency),
                    ),
                    interrupt=interrupt,
                )
            except BaseException:
                mark(k, "failed")
                raise
            outcome = RunOutcome.read(run_dir)
            if not outcome.complete:
                plan.points[k] = replace(point, status="interrupted")
                stopped_at = point
                break
            if outcome.all_failed:
                mark(k, "failed")
                raise AllTurnsFailed(
                    f"C={point.concurrency}: {outcome.failure(run_dir)}; the sweep stopped here (rerun the same command to resume from this point)"
                )
            numbers = read_numbers(run_dir)
            if numbers is not None:
                echo(point_line(point.concurrency, numbers))
            if after_point is not None:  # off the loop: scoring a point is seconds of CPU
                await asyncio.to_thread(after_point, run_dir)
            mark(k, "done")
    plan.write(folder)
    for line in sweep_table([(p.concurrency, p.status, read_numbers(folder / p.dir)) for p in plan.points]):
        echo(line)
    if interrupt.requested:
        where = (
            f"C={stopped_at.concurrency} was interrupted and will be rerun"
            if stopped_at
            else "it stopped between points"
        )
        todo = sum(p.status != "done" for p in plan.points)
        raise Interrupted(
            f"sweep {folder} stopped by a signal: {where}; {todo} point(s) still to run "
            "(run the same command again to resume)",
            interrupt.exit_code,
        )
    return folder
