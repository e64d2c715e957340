"""`trajbench analyze cache RUN_DIR`: join a run's server-reported cached tokens with the ideal
reusable prefix of each turn, attribute every deficit to one cause, and write the results
(docs/cache.md): cache_analysis.json, cache_turns.parquet and PNG plots, beside the run's files
or in `--out`, written to a temporary folder first and renamed into place."""

from __future__ import annotations

import bisect
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import astuple, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import traces
from traces.tokenizers import ChatTokenizer, load_tokenizer

from ..engine import CacheMetrics
from ..errors import ReplayError
from ..results import CACHE_TURNS_FILE, RUN_FILE, Record, RunInfo, amend_seal, read_records, read_run_info
from .causes import attribute, count_mismatch, drift_evidence, infer_block_size
from .drift import UNCHECKED, Coverage, TemplateCheck, read_template_check
from .ideal import PromptTexts, StoredAs, ideal_prefixes
from .model import CAUSES, RULES, TURN_SCHEMA, CacheAnalysis, CacheTurn, CauseTotal
from .simunits import SIM_UNITS, sim_units


@dataclass(frozen=True)
class CacheOptions:
    block_size: int | None = None  # None: inferred from the cached counts
    tokenizer: str | None = None  # None: the run's --tokenizer, else its profile's tokenizer
    shards: str | None = None  # None: the folder run.json names
    template_check: str | None = None  # a `traces check-template --json` file of the run's shards


@dataclass(frozen=True)
class CacheResult:
    analysis: CacheAnalysis
    rows: list[CacheTurn]
    out: Path
    files: list[Path]


def run_tokenizer(run_dir: Path, info: RunInfo, spec: str | None) -> tuple[str, ChatTokenizer]:
    """The tokenizer the run's prompts are counted with: --tokenizer, else the run's own, else
    its profile's; loaded from local files only, with the fix in the error."""
    content = info.profile_content or {}
    if spec is None:
        spec = info.tokenizer or content.get("tokenizer")
    if spec is None:
        try:
            spec = traces.get_profile(info.profile).tokenizer
        except traces.TraceError as exc:
            raise ReplayError(f"{run_dir}: {exc}; pass --tokenizer NAME[:PATH]") from None
    try:
        return spec, load_tokenizer(spec, template_kwargs=dict(content.get("chat_template_kwargs") or {}))
    except traces.TraceError as exc:
        raise ReplayError(
            f"{run_dir}: the run's tokenizer {spec!r} (profile {info.profile}) cannot be loaded: {exc}; "
            "token counts must use the run's tokenizer, so pass --tokenizer NAME:PATH with its local files "
            "(docs/cache.md)"
        ) from None


def counting_tokenizer(
    run_dir: Path, info: RunInfo, spec: str | None, records: list[Record], shards: traces.Shards
) -> tuple[str, ChatTokenizer, bool]:
    """(name, tokenizer, simulated) the analysis counts with: `spec` when given; for a run against
    trajbench's simulator, what the simulator counted with (its `--tokenizer`, else its own
    ~4-characters-per-token units, `simunits`); else the run's tokenizer (`run_tokenizer`).

    A standalone `serve-sim` records no settings in run.json: its units are recognised from the
    first answered turn, whose prompt count equals the simulator's own count of that prompt only
    when it counted that way."""
    simulated = info.target == "simulated"
    if spec is None and simulated:
        if info.simulator is not None:
            if info.simulator.tokenizer is None:
                return SIM_UNITS, sim_units(), True
            spec = info.simulator.tokenizer
        elif _counted_like_the_simulator(records, shards, info.salt):
            return SIM_UNITS, sim_units(), True
    name, tok = run_tokenizer(run_dir, info, spec)
    return name, tok, simulated


def _counted_like_the_simulator(records: list[Record], shards: traces.Shards, salt_mode: str) -> bool:
    first = next((r for r in records if r.ok and r.prompt_tokens is not None), None)
    if first is None:
        return False
    isl = PromptTexts(sim_units(), shards, salt_mode).get(first).isl
    return isl == first.prompt_tokens


def _shards(run_dir: Path, info: RunInfo, given: str | None) -> traces.Shards:
    where = given or info.shards
    try:
        shards = traces.Shards(where)
    except traces.TraceError as exc:
        raise ReplayError(
            f"{run_dir}/{RUN_FILE} names shards {where}, which cannot be read ({exc}); pass --shards DIR with "
            "the folder the run replayed (docs/cache.md)"
        ) from None
    if shards.content_hash != info.dataset.content_hash:
        raise ReplayError(
            f"{where}: content hash {shards.content_hash[:16]}… is not the run's dataset "
            f"({info.dataset.content_hash[:16]}…); pass --shards DIR with the folder the run replayed"
        )
    return shards


def _in_flight(sent: list[Record]) -> list[int]:
    """Per record (in send order): other turns sent before it and not finished when it was sent."""
    ends = sorted(r.t_last_ns if r.t_last_ns is not None else r.t_send_ns for r in sent)
    return [max(0, k - bisect.bisect_right(ends, r.t_send_ns)) for k, r in enumerate(sent)]


def _pressure(sent: list[Record], isl: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """Prompt tokens of other sessions sent after a session's previous turn and before this one,
    on this turn's replica when the run recorded replicas (all turns otherwise)."""
    lanes: dict[str | None, tuple[list[int], list[int]]] = defaultdict(lambda: ([], [0]))
    for r in sent:
        times, cum = lanes[r.replica]
        times.append(r.t_send_ns)
        cum.append(cum[-1] + isl[(r.instance_id, r.turn)])
    prev: dict[str, Record] = {}
    out: dict[tuple[str, int], int] = {}
    for r in sent:
        p = prev.get(r.instance_id)
        total = 0
        if p is not None:
            times, cum = lanes[r.replica]
            total = cum[bisect.bisect_left(times, r.t_send_ns)] - cum[bisect.bisect_right(times, p.t_send_ns)]
        out[(r.instance_id, r.turn)] = max(0, total)
        prev[r.instance_id] = r
    return out


def _coverage(check: TemplateCheck | None, stored: StoredAs, prev_turn: int | None, turn: int) -> Coverage:
    """The template check's coverage of a run turn: the checks of the stored instance it replays,
    when the run rendered it as stored. A cycled repeat re-salted past the stored ones renders
    another salt, whose tokens differ in length, so the check's positions would be off by a few
    tokens: such a turn counts as unchecked (the count check decides, docs/cache.md)."""
    if check is None or not stored.same_render:
        return UNCHECKED
    return check.at(stored.instance_id, (prev_turn, turn))


def analyse_run(
    run_dir: str | os.PathLike[str], options: CacheOptions = CacheOptions()
) -> tuple[CacheAnalysis, list[CacheTurn]]:
    """The analysis of one run folder (nothing written)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise ReplayError(f"{run}: no such folder; pass a run folder written by `trajbench replay run`")
    info = read_run_info(run)
    shards = _shards(run, info, options.shards)
    records = list(read_records(run))
    spec, tok, simulated = counting_tokenizer(run, info, options.tokenizer, records, shards)
    check = None
    if options.template_check is not None:
        check = read_template_check(options.template_check, shards.content_hash, tok.name)
    ok = [r for r in records if r.ok]
    used = sorted((r for r in ok if r.cached_tokens is not None), key=lambda r: (r.t_send_ns, r.instance_id, r.turn))
    texts = PromptTexts(tok, shards, info.salt)
    ideals = ideal_prefixes(tok, used, texts)
    if options.block_size is not None:
        block, source = options.block_size, "given"
    else:
        guess = infer_block_size(r.cached_tokens or 0 for r in used)
        block, source = (guess, "inferred") if guess else (1, "unknown")
    metrics = CacheMetrics.read(run) if CacheMetrics.exists(run) else None
    rose = metrics.rise("evict") if metrics is not None else None
    isl = {k: v.isl for k, v in ideals.items()}
    pressure = _pressure(used, isl)
    flight = _in_flight(used)
    t0 = used[0].t_send_ns if used else 0
    prev: dict[str, Record] = {}
    rows: list[CacheTurn] = []
    for r, busy in zip(used, flight, strict=True):
        key = (r.instance_id, r.turn)
        ideal = ideals[key]
        cached = r.cached_tokens or 0
        reusable = ideal.reusable
        deficit = reusable - cached
        p = prev.get(r.instance_id)
        prev_replica = p.replica if p is not None else None
        cover = _coverage(check, texts.stored(r.instance_id), p.turn if p is not None else None, r.turn)
        evidence = drift_evidence(
            ideal=reusable,
            checked=cover.checked,
            inside_divergence=cover.inside,
            count_mismatch=count_mismatch(r.prompt_tokens, ideal.isl, block),
        )
        cause = attribute(
            deficit=deficit,
            block_size=block,
            within=ideal.within,
            cross=ideal.cross,
            replica=r.replica,
            prev_replica=prev_replica,
            pressure_tokens=pressure[key],
            evictions_rose=rose,
            drift=evidence is not None,
        )
        gap = None
        if p is not None and p.t_last_ns is not None:
            gap = round((r.t_send_ns - p.t_last_ns) / 1e9, 6)
        rows.append(
            CacheTurn(
                r.instance_id,
                r.trajectory_id,
                r.repeat,
                r.turn,
                round((r.t_send_ns - t0) / 1e9, 6),
                r.replica,
                prev_replica,
                ideal.isl,
                r.prompt_tokens,
                ideal.within,
                ideal.cross,
                reusable,
                cached,
                deficit,
                round(cached / reusable, 6) if reusable > 0 else None,
                cause,
                round(r.delay_s, 6),
                gap,
                pressure[key],
                busy,
                cover.checked,
                cover.divergence,
                evidence,
            )
        )
        prev[r.instance_id] = r
    rows.sort(key=lambda x: (x.instance_id, x.turn))
    return _summary(run, info, spec, block, source, rows, records, rose, metrics, check, simulated), rows


def _summary(
    run: Path,
    info: RunInfo,
    spec: str,
    block: int,
    source: str,
    rows: list[CacheTurn],
    records: list[Record],
    rose: float | None,
    metrics: CacheMetrics | None,
    check: TemplateCheck | None,
    simulated: bool,
) -> CacheAnalysis:
    positive = sum(max(0, r.deficit) for r in rows)
    totals = []
    for cause in CAUSES:
        mine = [r for r in rows if r.cause == cause]
        d = sum(max(0, r.deficit) for r in mine)
        totals.append(CauseTotal(cause, len(mine), d, round(d / positive, 6) if positive else 0.0))
    ideal = sum(r.ideal for r in rows)
    cached = sum(r.cached for r in rows)
    if metrics is None:
        said = "none"
    elif not metrics.before.ok:
        said = metrics.before.error or "failed"
    elif metrics.after is None:
        said = "scraped before the run only"
    elif not metrics.after.ok:
        said = metrics.after.error or "failed"
    else:
        said = "scraped"
    return CacheAnalysis(
        run=run.resolve().name,
        dataset=info.dataset.name,
        tokenizer=spec,
        block_size=block,
        block_size_source=source,
        concurrency=info.concurrency,
        replica_header=info.replica_header,
        turns=len(rows),
        turns_without_cached=sum(1 for r in records if r.ok and r.cached_tokens is None),
        failed_turns=sum(1 for r in records if not r.ok),
        ideal_tokens=ideal,
        cached_tokens=cached,
        deficit_tokens=positive,
        surplus_turns=sum(1 for r in rows if r.deficit < -block),
        hit_rate_of_ideal=round(cached / ideal, 6) if ideal else 0.0,
        within_block_share=round(sum(1 for r in rows if r.deficit <= block) / len(rows), 6) if rows else 0.0,
        count_mismatch_turns=sum(1 for r in rows if count_mismatch(r.server_prompt_tokens, r.isl, block)),
        evictions_rose=rose,
        metrics=said,
        causes=totals,
        rules=dict(RULES),
        template_check=check.name if check is not None else None,
        template_check_sha256=check.sha256 if check is not None else None,
        template_check_turns=sum(1 for r in rows if r.template_checked),
        count_fallback_turns=sum(1 for r in rows if r.drift_evidence == "count"),
        simulated=simulated,
    )


def write_turns(rows: list[CacheTurn], path: Path) -> Path:
    names = TURN_SCHEMA.names
    columns: dict[str, list[object]] = {n: [] for n in names}
    for r in rows:
        for n, v in zip(names, astuple(r), strict=True):
            columns[n].append(v)
    table = pa.table(columns, schema=TURN_SCHEMA)
    pq.write_table(table, path, compression="zstd")
    return path


def analyse_cache(
    run_dir: str | os.PathLike[str], options: CacheOptions = CacheOptions(), out: str | os.PathLike[str] | None = None
) -> CacheResult:
    """Analyse a run folder and write its results (in the run folder, or `out`)."""
    from .plots import cache_charts

    analysis, rows = analyse_run(run_dir, options)
    dest = Path(out) if out is not None else Path(run_dir)
    dest.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".cache-analysis-", dir=dest))
    try:
        made = [analysis.write(tmp), write_turns(rows, tmp / CACHE_TURNS_FILE), *cache_charts(analysis, rows, tmp)]
        files = []
        for f in made:
            os.replace(f, dest / f.name)
            files.append(dest / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out is None:  # written into the run folder: a sealed folder stays sealed (docs/files.md)
        amend_seal(dest, [f.name for f in files], "analyze cache")
    return CacheResult(analysis, rows, dest, files)


@dataclass(frozen=True)
class SweepCacheResult:
    points: list[tuple[int, CacheResult]]
    chart: Path


def analyse_sweep(
    sweep_dir: str | os.PathLike[str], options: CacheOptions = CacheOptions(), out: str | os.PathLike[str] | None = None
) -> SweepCacheResult:
    """Analyse every finished point of a sweep folder (each into its run folder, or `out/<point>`)
    and chart the hit rate against concurrency."""
    from ..results import SweepPlan
    from .model import SWEEP_CHART
    from .plots import sweep_chart

    folder = Path(sweep_dir)
    try:
        plan = SweepPlan.read(folder)
    except traces.ContractError as exc:
        raise ReplayError(f"{exc}; pass a sweep folder written by `trajbench replay sweep`") from None
    points: list[tuple[int, CacheResult]] = []
    for p in sorted(plan.points, key=lambda p: p.concurrency):
        run = folder / p.dir
        if p.status != "done" or not (run / RUN_FILE).is_file():
            continue
        points.append((p.concurrency, analyse_cache(run, options, None if out is None else Path(out) / p.dir)))
    if not points:
        raise ReplayError(f"{folder}: no finished point to analyse; finish the sweep first (`trajbench replay sweep`)")
    dest = Path(out) if out is not None else folder
    tmp = Path(tempfile.mkdtemp(prefix=".cache-analysis-", dir=dest))
    try:
        made = sweep_chart([(c, r.analysis) for c, r in points], tmp / SWEEP_CHART)
        os.replace(made, dest / SWEEP_CHART)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return SweepCacheResult(points, dest / SWEEP_CHART)
