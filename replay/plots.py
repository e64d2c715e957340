"""PNG charts of a comparison: the Pareto step curve and metrics against concurrency.

Drawn and saved through `traces.png` (Agg, no varying metadata), so the same points give the
same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from traces.png import plt, save_png

from .pareto import Point, frontier, step_curve


def _by_label(points: Sequence[Point]) -> dict[str, list[Point]]:
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        groups[p.label].append(p)
    return {k: sorted(v, key=lambda p: p.concurrency) for k, v in sorted(groups.items())}


def pareto_chart(
    points: Sequence[Point],
    path: Path,
    *,
    y_label: str = "system throughput (output tok/s)",
    y: Callable[[Point], float] | None = None,
) -> Path:
    """Step curves of accurate points per system; failing points drawn as hollow crosses."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for k, (label, pts) in enumerate(_by_label(points).items()):
        color = f"C{k % 10}"
        good = [p for p in pts if p.accurate]
        if y is not None:
            good = [_rescaled(p, y(p)) for p in good]
        front = frontier(good)
        xs, ys = step_curve(front)
        ax.plot(xs, ys, drawstyle="default", color=color, label=label)
        ax.scatter([p.per_user_tps for p in good], [p.throughput_tps for p in good], color=color, zorder=3, s=22)
        for p in good:
            ax.annotate(
                f"C={p.concurrency}",
                (p.per_user_tps, p.throughput_tps),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        bad = [p for p in pts if not p.accurate]
        if bad:
            ax.scatter(
                [p.per_user_tps for p in bad],
                [(y(p) if y else p.throughput_tps) for p in bad],
                marker="x",
                color=color,
                zorder=3,
                label=f"{label}: fails an accuracy gate",
            )
    ax.set_xlabel("per-user speed (output tok/s per user)")
    ax.set_ylabel(y_label)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Throughput vs interactivity (measured points, step frontier)")
    return save_png(fig, path, dpi=110)


def _rescaled(p: Point, throughput: float) -> Point:
    from dataclasses import replace

    return replace(p, throughput_tps=throughput)


def metric_chart(
    points: Sequence[Point], path: Path, metric: Callable[[Point], float | None], y_label: str, *, log_x: bool = True
) -> Path:
    """One metric against concurrency, a line per system."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for k, (label, pts) in enumerate(_by_label(points).items()):
        known = [(p.concurrency, v) for p in pts if (v := metric(p)) is not None]
        if known:
            xs, ys = zip(*known, strict=True)
            ax.plot(xs, ys, marker="o", color=f"C{k % 10}", label=label)
    if log_x:
        ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (users)")
    ax.set_ylabel(y_label)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_png(fig, path, dpi=110)
