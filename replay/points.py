"""Reading measured points from run folders and sweep folders (the inputs of a report).

A run folder holds `run.json` and `result_summary.json`; a sweep folder holds `sweep.json`
listing its run folders. Only these files are read, so a report is reproducible from the folders
alone. The accuracy gates of each point are eval's: the caller passes a `Gates` reader (replay
does not read eval's files), or the points have none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import traces

from .errors import ReplayError
from .layout import SUMMARY_FILE, SWEEP_FILE
from .pareto import Point
from .runinfo import RunInfo
from .summary import ResultSummary


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


def load_point(run_dir: Path, label: str, gates_of: GatesOf | None = None) -> Point:
    run = _read(RunInfo, run_dir)
    summary = _read(ResultSummary, run_dir)
    assert isinstance(run, RunInfo) and isinstance(summary, ResultSummary)
    ours = summary.trajbench
    ttft90 = ours.ttft.p(90)
    window = ours.turns.window
    gates = gates_of(run_dir) if gates_of is not None else Gates()
    return Point(
        label=label,
        run_dir=str(run_dir),
        concurrency=run.concurrency,
        per_user_tps=ours.interactivity.e2e_interactivity,
        throughput_tps=ours.throughput.output_tokens_per_s,
        requests_per_s=ours.throughput.requests_per_s,
        ttft_p90_ms=None if ttft90 is None else ttft90 / 1e6,
        cache_hit=ours.cached_tokens.hit_rate,
        failed_turns=window.failed + window.aborted,
        issued_turns=window.sent + window.aborted,
        inline_score=gates.inline_score,
        inline_pass=gates.inline_pass,
        osl_mean=gates.osl_mean,
        osl_pass=gates.osl_pass,
    )


def run_dirs(folder: Path) -> list[Path]:
    """The finished run folders of a sweep folder, or the folder itself when it is one run."""
    from .sweep import SweepPlan

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


def load_points(inputs: list[tuple[str, Path]], gates_of: GatesOf | None = None) -> list[Point]:
    points = [load_point(d, label, gates_of) for label, folder in inputs for d in run_dirs(folder)]
    if not points:
        raise ReplayError("no finished runs in the given folders")
    return sorted(points, key=lambda p: (p.label, p.concurrency, p.run_dir))
