"""Reading measured points from run folders and sweep folders (the inputs of a report).

A run folder holds `run.json` and `result_summary.json`; a sweep folder holds `sweep.json`
listing its run folders. Only these files are read, so a report is reproducible from the folders
alone. The accuracy gates of each point are eval's: the caller passes a `Gates` reader (replay
does not read eval's files), or the points have none.

Results arrive incrementally (a baseline sweep, then more operating points), so one system may
come from several folders: the latest run at each concurrency is its point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import traces

from ..errors import ReplayError
from ..results import RUN_FILE, SUMMARY_FILE, SWEEP_FILE, ResultSummary, RunInfo
from .pareto import Point


@dataclass(frozen=True)
class Gates:
    """A point's accuracy verdicts (None: not computed) and the gate mode each was judged by
    ("official", "dataset" or "off", docs/accuracy.md; None: the gate did not run)."""

    inline_score: float | None = None
    inline_pass: bool | None = None
    osl_mean: float | None = None
    osl_pass: bool | None = None
    inline_gates: str | None = None
    osl_gates: str | None = None
    #: what a reader is told about research gates, in eval's words ('' for official gates)
    note: str = ""

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes of the gates that ran, sorted and distinct."""
        return tuple(sorted({m for m in (self.inline_gates, self.osl_gates) if m is not None}))


GatesOf = Callable[[Path], Gates]


def _read(cls: type[RunInfo] | type[ResultSummary], run_dir: Path) -> RunInfo | ResultSummary:
    try:
        return cls.read(run_dir)
    except traces.ContractError as exc:
        raise ReplayError(
            f"{exc}; rerun the point (it was not finished, or written by another trajbench version)"
        ) from None


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def load_point(run_dir: Path, label: str, gates_of: GatesOf | None = None) -> Point:
    run = _read(RunInfo, run_dir)
    summary = _read(ResultSummary, run_dir)
    assert isinstance(run, RunInfo) and isinstance(summary, ResultSummary)
    ours = summary.trajbench
    window = ours.turns.window
    gates = gates_of(run_dir) if gates_of is not None else Gates()
    research = [m for m in gates.modes if m != "official"]
    return Point(
        label=label,
        run_dir=str(run_dir),
        concurrency=run.concurrency,
        per_user_tps=ours.interactivity.e2e_interactivity,
        throughput_tps=ours.throughput.output_tokens_per_s,
        requests_per_s=ours.throughput.requests_per_s,
        ttft_p90_ms=_ms(ours.ttft.p(90)),
        cache_hit=ours.cached_tokens.hit_rate,
        failed_turns=window.failed + window.aborted,
        issued_turns=window.sent + window.aborted,
        inline_score=gates.inline_score,
        inline_pass=gates.inline_pass,
        osl_mean=gates.osl_mean,
        osl_pass=gates.osl_pass,
        ttft_p50_ms=_ms(ours.ttft.p(50)),
        ttft_p99_ms=_ms(ours.ttft.p(99)),
        tpot_p50_ms=_ms(ours.tpot.p(50)),
        tpot_p90_ms=_ms(ours.tpot.p(90)),
        gates="+".join(research) or "official",
        gates_note=gates.note if research else "",
        started_at=run.started_at,
        dataset_hash=run.dataset.content_hash,
        profile=run.profile,
        target=run.target,
        goodput_tps=None if ours.goodput is None else ours.goodput.output_tokens_per_s,
        session_goodput_tps=None if ours.goodput is None else ours.goodput.session_output_tokens_per_s,
    )


def run_dirs(folder: Path) -> list[Path]:
    """The finished run folders of a sweep folder, or the folder itself when it is one run."""
    from ..results import SweepPlan

    if SweepPlan.exists(folder):
        try:
            plan = SweepPlan.read(folder)
        except traces.ContractError as exc:
            raise ReplayError(str(exc)) from None
        # an interrupted point has a summary too, of a partial run: not a point of the curve
        return [folder / p.dir for p in plan.points if p.status == "done" and ResultSummary.exists(folder / p.dir)]
    if ResultSummary.exists(folder):
        return [folder]
    raise ReplayError(f"{folder}: neither a run folder ({SUMMARY_FILE}) nor a sweep folder ({SWEEP_FILE})")


@dataclass(frozen=True)
class Replaced:
    """A run that a later run of the same system at the same concurrency replaced."""

    label: str
    concurrency: int
    run_dir: str
    started_at: str
    by: str  # the run folder that replaced it


@dataclass(frozen=True)
class PointSet:
    """The points of a report, one per system and concurrency, and the runs they replaced."""

    points: list[Point]
    replaced: list[Replaced]


def collect_points(inputs: list[tuple[str, Path]], gates_of: GatesOf | None = None) -> PointSet:
    """The points of (label, run or sweep folder) inputs. A label given several folders is one
    system built up over time (a baseline sweep, then added points): at each concurrency its
    latest run (run.json's started_at) is the point. One system is one model profile on one
    dataset: folders that differ in either are refused, naming both."""
    systems: dict[str, dict[Path, Path]] = {}
    for label, folder in inputs:
        for d in run_dirs(folder):
            systems.setdefault(label, {}).setdefault(d.resolve(), d)  # a run given twice counts once
    points: list[Point] = []
    replaced: list[Replaced] = []
    for label, dirs in systems.items():
        loaded = [load_point(d, label, gates_of) for d in dirs.values()]
        _one_system(label, loaded)
        latest: dict[int, Point] = {}
        for p in loaded:  # in the order given: of two runs started at the same time the later folder wins
            old = latest.get(p.concurrency)
            if old is None:
                latest[p.concurrency] = p
                continue
            keep, drop = (p, old) if _started(p) >= _started(old) else (old, p)
            latest[p.concurrency] = keep
            replaced.append(Replaced(label, drop.concurrency, drop.run_dir, drop.started_at, keep.run_dir))
        points.extend(latest.values())
    if not points:
        raise ReplayError("no finished runs in the given folders")
    return PointSet(
        sorted(points, key=lambda p: (p.label, p.concurrency, p.run_dir)),
        sorted(replaced, key=lambda r: (r.label, r.concurrency, r.run_dir)),
    )


def _one_system(label: str, points: list[Point]) -> None:
    first = points[0]
    for p in points[1:]:
        if p.profile != first.profile:
            raise ReplayError(
                f"system {label!r}: {first.run_dir} ran profile {first.profile} but {p.run_dir} ran {p.profile}; "
                "one system's curve is one model: give the folders different --label names"
            )
        if p.dataset_hash != first.dataset_hash:
            raise ReplayError(
                f"system {label!r}: {first.run_dir} replayed dataset content hash {first.dataset_hash[:16]}… but "
                f"{p.run_dir} replayed {p.dataset_hash[:16]}…; one system's curve is one dataset: "
                "give the folders different --label names, or rerun the point on the same shards"
            )


def _started(p: Point) -> datetime:
    try:
        when = datetime.fromisoformat(p.started_at)
    except ValueError:
        raise ReplayError(
            f"{p.run_dir}/{RUN_FILE}: started_at {p.started_at!r} is not an ISO 8601 time, so it cannot be "
            "ordered against the system's other runs; rerun the point"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
