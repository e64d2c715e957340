"""The explorer's data: every system and every measured point with its figures and its verdict
(docs/explore.md).

The points are the report's (`replay.report.collect_points`: a system's latest run at each
concurrency, one model and one dataset per system); the verdicts are eval's accuracy gates (the
`gates_of` reader) and a submission's review. A point's verdict is, in this order:

- `failed`: an accuracy gate failed, or the review failed the point (or the whole submission);
- `research`: judged by research gates, run with a user profile, or measured against the
  simulator: never an official result;
- `reviewed`: a passing review covers it;
- `unknown`: nothing reviewed it (a sweep or run folder, a submission not yet reviewed).

Runs a later run replaced stay in the data, marked, with the day each point was added, so the
page can draw a system's history (its frontier as it stood on each earlier day).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay import REPORT_FILE, RUN_FILE, RunInfo, Slo
from replay.report import GatesOf, Point, collect_points

from ..errors import EvalError
from ..submission import REVIEW_FILE
from .sources import SystemSource
from .submission import Submission

VERDICTS = {
    "reviewed": "a passing review (`trajbench review`) covers the point",
    "research": "judged by research gates, a user profile or the simulator: never an official result",
    "unknown": "no review covers the point (a sweep or run folder, or a submission not yet reviewed)",
    "failed": "an accuracy gate or the review failed it: hidden unless asked for, never on a frontier",
}
#: bumped when the data's shape changes, so the page can refuse data it does not understand
DATA_VERSION = 1


@dataclass(frozen=True)
class Audit:
    """One check of the review that judged a point."""

    check: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class ExplorePoint:
    """One measured run as the page draws it."""

    id: str
    system: str  # its system's id
    concurrency: int
    per_user_tps: float
    throughput_tps: float
    requests_per_s: float
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p90_ms: float | None
    goodput_tps: float | None  # under the run's per-turn SLO (`goodput_slo`)
    goodput_slo: str | None
    session_goodput_tps: float | None  # under the run's SLOs, whole sessions (`session_goodput_slo`)
    session_goodput_slo: str | None
    cache_hit: float | None
    failed_turns: int
    issued_turns: int
    inline_score: float | None
    inline_pass: bool | None
    osl_mean: float | None
    osl_pass: bool | None
    gates: str
    verdict: str
    research: bool
    simulated: bool
    reasons: list[str]  # why it failed, why it is research
    audits: list[Audit]
    started_at: str
    added: str  # the day it was added: its submission's date, else its run's
    run: str  # its run folder, as the input names it
    page: str | None  # its run's own report, copied into the site
    seal: str | None
    current: bool  # the system's point at this concurrency (False: a later run replaced it)
    replaced_by: str | None


@dataclass(frozen=True)
class ExploreSystem:
    id: str
    name: str
    kind: str  # submission, sweep or run
    submitter: str | None
    division: str | None
    model: str  # the model profile
    dataset_hash: str
    accelerator: str | None
    accelerators: int | None
    engine: str | None
    date: str  # its (latest) submission date, else the day of its latest run
    price_per_hour: float | None
    power_watts: float | None
    swebench_mean: float | None
    description: str  # what its system description gives, or why there is none
    review: str | None  # "passed", "failed"; None: not reviewed
    sources: list[str]


@dataclass(frozen=True)
class ExploreData:
    version: int
    systems: list[ExploreSystem]
    points: list[ExplorePoint]
    verdicts: dict[str, str] = field(default_factory=lambda: dict(VERDICTS))


@dataclass(frozen=True)
class Built:
    """The data, and the run reports to copy into the site (site path → source file)."""

    data: ExploreData
    pages: dict[str, Path]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "system"


def _ids(labels: list[str]) -> dict[str, str]:
    """A stable id per system, readable in a URL: its name in lower-case words."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for label in sorted(labels):
        base = _slug(label)
        sid, k = base, 2
        while sid in taken:
            sid, k = f"{base}-{k}", k + 1
        taken.add(sid)
        out[label] = sid
    return out


def _finite(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def _started(text: str, run: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise EvalError(
            f"{run}/{RUN_FILE}: started_at {text!r} is not an ISO 8601 time, so the run cannot be placed in its "
            "system's history; rerun the point"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _turn_slo(slo: Slo | None) -> str | None:
    """The limits turn goodput is judged by: the per-turn ones (a session limit changes no turn's
    verdict)."""
    if slo is None or (slo.ttft_ms is None and slo.tpot_ms is None):
        return None
    return Slo(ttft_ms=slo.ttft_ms, tpot_ms=slo.tpot_ms).describe()


def _research_reasons(p: Point, info: RunInfo) -> list[str]:
    out = []
    if p.research:
        out.append(p.gates_note or f"research gates ({p.gates}): not an official result")
    if p.target != "real":
        out.append("measured against trajbench's simulator, not a real inference server: not an official result")
    if info.profile_built_in is False:
        out.append(f"user profile {info.profile}: its gates are its author's, not the benchmark's")
    return out


def _failed_reasons(p: Point, sub: Submission | None, audits: list[Audit]) -> list[str]:
    out = []
    if p.inline_pass is False:
        out.append(f"inline accuracy {p.inline_score if p.inline_score is not None else '?'} is below the bar")
    if p.osl_pass is False:
        out.append(f"mean output length {p.osl_mean if p.osl_mean is not None else '?'} is outside the band")
    out += [f"review: {a.check}: {a.reason}".rstrip(": ") for a in audits if not a.passed]
    if sub is not None and sub.review is not None and not sub.review.passed and not any(not a.passed for a in audits):
        out.append(f"review: the submission failed its review ({sub.root.name}/{REVIEW_FILE})")
    return out


def _point(
    p: Point,
    pid: str,
    sid: str,
    source: SystemSource,
    info: RunInfo,
    page: str | None,
    *,
    current: bool,
    replaced_by: str | None,
) -> ExplorePoint:
    run_dir = Path(p.run_dir)
    sub = source.submission_of(run_dir)
    audits = [Audit(c.check, c.passed, c.reason) for c in sub.checks_of(run_dir)] if sub is not None else []
    failed = _failed_reasons(p, sub, audits)
    research = _research_reasons(p, info)
    verdict = (
        "failed"
        if failed
        else "research"
        if research
        else "reviewed"
        if sub is not None and sub.review is not None and sub.review.passed
        else "unknown"
    )
    added = (sub.manifest.submission_date if sub is not None else p.started_at)[:10]
    return ExplorePoint(
        id=pid,
        system=sid,
        concurrency=p.concurrency,
        per_user_tps=p.per_user_tps,
        throughput_tps=p.throughput_tps,
        requests_per_s=p.requests_per_s,
        ttft_p50_ms=_finite(p.ttft_p50_ms),
        ttft_p90_ms=_finite(p.ttft_p90_ms),
        ttft_p99_ms=_finite(p.ttft_p99_ms),
        tpot_p50_ms=_finite(p.tpot_p50_ms),
        tpot_p90_ms=_finite(p.tpot_p90_ms),
        goodput_tps=_finite(p.goodput_tps),
        goodput_slo=_turn_slo(info.slo) if p.goodput_tps is not None else None,
        session_goodput_tps=_finite(p.session_goodput_tps),
        session_goodput_slo=(info.slo or Slo()).describe() if p.session_goodput_tps is not None else None,
        cache_hit=_finite(p.cache_hit),
        failed_turns=p.failed_turns,
        issued_turns=p.issued_turns,
        inline_score=p.inline_score,
        inline_pass=p.inline_pass,
        osl_mean=p.osl_mean,
        osl_pass=p.osl_pass,
        gates=p.gates,
        verdict=verdict,
        research=bool(research),
        simulated=p.target != "real",
        reasons=failed + research,
        audits=audits,
        started_at=p.started_at,
        added=added,
        run=_shown(run_dir, source),
        page=page,
        seal=sub.seal_of(run_dir) if sub is not None else None,
        current=current,
        replaced_by=replaced_by,
    )


def _shown(run_dir: Path, source: SystemSource) -> str:
    """A run folder as the input names it: under the submission or the folder given."""
    for sub in source.submissions:
        if run_dir.is_relative_to(sub.root):
            return f"{sub.root.as_posix()}/{run_dir.relative_to(sub.root).as_posix()}"
    for folder, given in zip(source.folders, source.given_as, strict=True):
        if run_dir.is_relative_to(folder):
            rel = run_dir.relative_to(folder).as_posix()
            return given if rel == "." else f"{given}/{rel}"
    return run_dir.as_posix()


def _description(source: SystemSource) -> tuple[dict[str, Any], str]:
    """The system's fields from its (latest) submission, and what its description gives."""
    if not source.submissions:
        return {}, f"no system description: a {source.kind} folder (submit it with `trajbench submit` to add one)"
    sub = source.submissions[-1]
    m, d = sub.manifest, sub.description
    framework = str(d.values.get("framework", "")).strip() if d is not None else ""
    fields: dict[str, Any] = {
        "submitter": m.submitter,
        "division": m.division,
        # run.json's engine identity (the manifest copies it), else what the description calls it
        "engine": ", ".join(sub.engines()) or framework or None,
        "swebench_mean": m.swebench.mean if m.swebench is not None else None,
        "date": max(s.manifest.submission_date for s in source.submissions)[:10],
        "review": None if sub.review is None else "passed" if sub.review.passed else "failed",
    }
    if d is None:
        return fields, f"no system description ({sub.description_file} is missing)"
    hw = d.hardware
    fields |= {
        "accelerator": hw.accelerator_type,
        "accelerators": hw.accelerator_count,
        "price_per_hour": hw.price_per_hour_usd,
        "power_watts": hw.power_watts,
    }
    missing = [name for name, v in (("price per hour", hw.price_per_hour_usd), ("power", hw.power_watts)) if v is None]
    return fields, (
        f"{sub.description_file}" + (f": gives no {', no '.join(missing)}" if missing else ": gives every figure")
    )


def explore_data(sources: list[SystemSource], gates_of: GatesOf | None = None) -> Built:
    """Every system and its points (current and replaced) with their verdicts."""
    ids = _ids([s.label for s in sources])
    systems: list[ExploreSystem] = []
    points: list[ExplorePoint] = []
    pages: dict[str, Path] = {}
    for source in sources:
        system, mine = _system(source, ids[source.label], gates_of, pages)
        systems.append(system)
        points.extend(mine)
    return Built(ExploreData(DATA_VERSION, systems, points), pages)


def _page(run_dir: str, sid: str, pid: str, pages: dict[str, Path]) -> str | None:
    """Where the site keeps a run's own report (noted in `pages`), None when it has none."""
    report = Path(run_dir) / REPORT_FILE
    if not report.is_file():
        return None
    dest = f"runs/{sid}/{pid}/{REPORT_FILE}"
    pages[dest] = report
    return dest


def _system(
    source: SystemSource, sid: str, gates_of: GatesOf | None, pages: dict[str, Path]
) -> tuple[ExploreSystem, list[ExplorePoint]]:
    found = collect_points([(source.label, f) for f in source.folders], gates_of)
    mine: list[ExplorePoint] = []
    current_ids = {p.run_dir: f"{sid}.c{p.concurrency}" for p in found.points}
    for p in found.points:
        pid = current_ids[p.run_dir]
        info = RunInfo.read(p.run_dir)
        mine.append(
            _point(p, pid, sid, source, info, _page(p.run_dir, sid, pid, pages), current=True, replaced_by=None)
        )
    replaced = sorted(found.replaced, key=lambda r: (r.concurrency, _started(r.started_at, r.run_dir), r.run_dir))
    seen: dict[int, int] = {}
    for r in replaced:
        seen[r.concurrency] = seen.get(r.concurrency, 0) + 1
        pid = f"{sid}.c{r.concurrency}.r{seen[r.concurrency]}"
        old = collect_points([(source.label, Path(r.run_dir))], gates_of).points[0]
        mine.append(
            _point(
                old,
                pid,
                sid,
                source,
                RunInfo.read(r.run_dir),
                _page(r.run_dir, sid, pid, pages),
                current=False,
                replaced_by=_final(r.by, found.replaced, current_ids),
            )
        )
    fields, described = _description(source)
    first = found.points[0]
    system = ExploreSystem(
        id=sid,
        name=source.label,
        kind=source.kind,
        submitter=fields.get("submitter"),
        division=fields.get("division"),
        model=first.profile,
        dataset_hash=first.dataset_hash,
        accelerator=fields.get("accelerator"),
        accelerators=fields.get("accelerators"),
        engine=fields.get("engine"),
        date=fields.get("date") or max(p.started_at for p in mine if p.current)[:10],
        price_per_hour=fields.get("price_per_hour"),
        power_watts=fields.get("power_watts"),
        swebench_mean=fields.get("swebench_mean"),
        description=described,
        review=fields.get("review"),
        sources=list(source.given_as),
    )
    return system, sorted(mine, key=lambda p: (not p.current, p.concurrency, p.id))


def _final(by: str, replaced: list[Any], current_ids: dict[str, str]) -> str | None:
    """The current point that (perhaps through later replacements) replaced a run."""
    hops = {r.run_dir: r.by for r in replaced}
    seen = set()
    while by not in current_ids and by in hops and by not in seen:
        seen.add(by)
        by = hops[by]
    return current_ids.get(by)
