"""The throughput / interactivity Pareto frontier of measured points (docs/metrics.md).

Each fixed-concurrency run is one point (per-user speed x, system throughput y). The frontier
keeps exactly the non-dominated points and is drawn as a step function through measured points
only: at any per-user speed x the curve shows the best throughput some *measured* point reaches
at that speed or faster, never an interpolation between points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True)
class Point:
    """One measured run, reduced to what the comparison needs."""

    label: str
    run_dir: str
    concurrency: int
    per_user_tps: float
    throughput_tps: float
    requests_per_s: float
    ttft_p90_ms: float | None
    cache_hit: float | None
    failed_turns: int
    issued_turns: int
    inline_score: float | None
    inline_pass: bool | None
    osl_mean: float | None
    osl_pass: bool | None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p90_ms: float | None = None
    #: "official", else the research gate modes that judged it ("dataset", "off", "dataset+off")
    gates: str = "official"
    gates_note: str = ""  # how a research point is labelled (eval's words)
    started_at: str = ""  # run.json's: the latest run at a concurrency is a system's point
    dataset_hash: str = ""
    profile: str = ""
    target: str = "real"  # or "simulated": never an official point
    #: goodput under the run's SLO (replay.results.goodput): of turns, of sessions; None without an SLO
    goodput_tps: float | None = None
    session_goodput_tps: float | None = None

    @property
    def accurate(self) -> bool:
        """A point counts only when no accuracy gate failed (an unknown gate is not a failure)."""
        return self.inline_pass is not False and self.osl_pass is not False

    @property
    def research(self) -> bool:
        """Judged by research gates (docs/accuracy.md): never an official point, never on an
        official frontier."""
        return self.gates != "official"


def dominates(a: Point, b: Point) -> bool:
    return (
        a.per_user_tps >= b.per_user_tps
        and a.throughput_tps >= b.throughput_tps
        and (a.per_user_tps > b.per_user_tps or a.throughput_tps > b.throughput_tps)
    )


def frontier(points: Sequence[Point]) -> list[Point]:
    """The non-dominated points, by per-user speed ascending (so throughput descending)."""
    keep = [p for p in points if not any(dominates(q, p) for q in points)]
    return sorted(keep, key=lambda p: (p.per_user_tps, -p.throughput_tps, p.concurrency))


def step_curve(front: Sequence[Point]) -> tuple[list[float], list[float]]:
    """Vertices of the staircase through frontier points (sorted as `frontier` returns them).

    From x = 0 the curve holds the throughput of the slowest-per-user frontier point, drops at
    that point's x to the next point's throughput, and so on; it ends at the fastest point.
    """
    if not front:
        return [], []
    xs, ys = [0.0], [front[0].throughput_tps]
    for here, nxt in pairwise(front):
        xs += [here.per_user_tps, here.per_user_tps]
        ys += [here.throughput_tps, nxt.throughput_tps]
    xs.append(front[-1].per_user_tps)
    ys.append(front[-1].throughput_tps)
    return xs, ys


def normalised(
    value: float, *, cost_per_hour: float | None = None, power_watts: float | None = None
) -> dict[str, float]:
    """Throughput per dollar-hour and per watt, for the inputs given."""
    out: dict[str, float] = {}
    if cost_per_hour:
        out["per_dollar_hour"] = value / cost_per_hour
    if power_watts:
        out["per_watt"] = value / power_watts
    return out
