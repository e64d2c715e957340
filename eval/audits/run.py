"""`trajbench audit RUN_DIR…` (and the audit lines of `eval check`): every agentic audit of every
run folder, then the same-model audit of them all with the SWE-bench runs (docs/audits.md).

An audit that cannot judge (the run's tokenizer does not load, its shards are gone, the server
reported no cached tokens) fails and says why: an audit that cannot see never passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import traces
from replay import Record, ReplayError, RunInfo, read_records, read_run_info
from replay.cacheobs import CacheOptions, analyse_run
from replay.engine import CacheMetrics

from ..errors import EvalError
from ..swebench import SwebenchError, SwebenchSummary, read_summary
from .cache import cache_exploit, warm_cache
from .engine import same_model
from .model import AuditResult, could_not_run
from .output import output_consistency


@dataclass(frozen=True)
class AuditOptions:
    """How the cache audits count (as `analyze cache` takes them, docs/cache.md)."""

    tokenizer: str | None = None  # None: the run's --tokenizer, else its profile's
    block_size: int | None = None  # None: inferred from the cached counts
    shards: str | None = None  # None: the folder run.json names


def run_folders(paths: Sequence[str | Path]) -> list[Path]:
    """The run folders of `paths`: a sweep folder stands for its finished points."""
    from replay import SweepPlan

    out: list[Path] = []
    for p in map(Path, paths):
        if SweepPlan.exists(p) and not RunInfo.exists(p):
            try:
                plan = SweepPlan.read(p)
            except traces.ContractError as exc:
                raise EvalError(
                    f"{exc}; pass run folders or a sweep folder written by `trajbench replay sweep`"
                ) from None
            out += [
                p / point.dir for point in sorted(plan.points, key=lambda q: q.concurrency) if point.status == "done"
            ]
        else:
            out.append(p)
    return out


def _records(run: Path) -> list[Record]:
    """One record per (instance, turn); a repeated one keeps the answered line (as eval reads runs)."""
    out: dict[tuple[str, int], Record] = {}
    for r in read_records(run):
        key = (r.instance_id, r.turn)
        if key not in out or (r.ok and not out[key].ok):
            out[key] = r
    return [out[k] for k in sorted(out)]


def _limits(info: RunInfo) -> tuple[dict[str, float], str]:
    """The output-consistency limits of the run's profile (this trajbench's of that name, else the
    one run.json records in full), and the profile's name."""
    known = traces.profiles().get(info.profile)
    if known is not None:
        return known.output_limits(), known.name
    stated = (info.profile_content or {}).get("output_consistency") or {}
    return {**traces.DEFAULT_OUTPUT_CONSISTENCY, **stated}, info.profile


def audit_run(run: Path, info: RunInfo, options: AuditOptions = AuditOptions()) -> list[AuditResult]:
    """The audits of one run folder (all but same-model, which compares folders)."""
    point = str(run)
    out: list[AuditResult] = []
    try:
        analysis, rows = analyse_run(
            run, CacheOptions(block_size=options.block_size, tokenizer=options.tokenizer, shards=options.shards)
        )
    except (ReplayError, traces.TraceError) as exc:
        why = f"its cache analysis (`trajbench analyze cache`) failed: {exc}"
        out += [could_not_run(a, point, why) for a in ("cache-exploit", "warm-cache")]
    else:
        metrics = CacheMetrics.read(run) if CacheMetrics.exists(run) else None
        out += [cache_exploit(point, analysis, rows), warm_cache(point, info, analysis, rows, metrics)]
    try:
        records = _records(run)
    except ReplayError as exc:
        out.append(could_not_run("output-consistency", point, str(exc)))
    else:
        limits, profile = _limits(info)
        out.append(output_consistency(point, records, limits, profile))
    return out


def audit_runs(
    run_dirs: Sequence[str | Path], *, swebench: Sequence[str | Path] = (), options: AuditOptions = AuditOptions()
) -> list[AuditResult]:
    """Every audit of every run folder (a sweep folder: its finished points), then same-model over
    them and the SWE-bench runs."""
    folders = run_folders(run_dirs)
    if not folders:
        raise EvalError("no run folder to audit; pass the run folders of every point (or a sweep folder)")
    results: list[AuditResult] = []
    points: list[tuple[str, RunInfo]] = []
    for run in folders:
        try:
            info = read_run_info(run)
        except ReplayError as exc:
            raise EvalError(str(exc)) from None
        points.append((str(run), info))
        results += audit_run(run, info, options)
    summaries: list[tuple[str, SwebenchSummary | str]] = []
    for d in swebench:
        try:
            summaries.append((str(d), read_summary(d)))
        except SwebenchError as exc:
            summaries.append((str(d), str(exc)))
    results.append(same_model(points, summaries))
    return results
