"""PNG charts of a comparison: the Pareto step curve and metrics against concurrency.

Drawn and saved through `traces.png` (Agg, no varying metadata), so the same points give the
same bytes. Every chart has a title; concurrency is a log2 axis ticked 1, 2, 4, 8 …; token
rates read 12k (k = 1,000); metrics that cannot be negative start at zero.

A system's points judged by research gates (docs/accuracy.md) draw their own dashed frontier,
labelled with what eval says of them ("research gates: dataset-derived — not an official
result"): an unofficial point never shares, or looks like, an official curve.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from traces.png import (
    Annotation,
    Figure,
    concurrency_axis,
    count_axis,
    label_points,
    number_axis,
    plt,
    save_png,
    token_axis,
    zero_based,
)

from .pareto import Point, frontier, step_curve


def _by_label(points: Sequence[Point]) -> dict[str, list[Point]]:
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        groups[p.label].append(p)
    return {k: sorted(v, key=lambda p: p.concurrency) for k, v in sorted(groups.items())}


def curves(points: Sequence[Point]) -> dict[tuple[str, str], list[Point]]:
    """The points of each frontier: one per system and gate kind (official first, then each
    research note), so official and research points never share a curve."""
    groups: dict[tuple[str, str], list[Point]] = defaultdict(list)
    for p in points:
        groups[(p.label, p.gates_note if p.research else "")].append(p)
    return {k: sorted(v, key=lambda p: p.concurrency) for k, v in sorted(groups.items())}


def curve_name(label: str, note: str, pts: Sequence[Point]) -> str:
    """A curve's legend entry: the system, what its gates make it, and a simulated target."""
    name = label
    if any(p.target != "real" for p in pts):
        name += " (simulated target)" if all(p.target != "real" for p in pts) else " (partly simulated)"
    return f"{name} — {note}" if note else name


def pareto_figure(
    points: Sequence[Point],
    *,
    y_label: str = "system throughput (output tok/s)",
    y: Callable[[Point], float] | None = None,
    title: str = "Throughput vs per-user speed (measured points, step frontier)",
) -> tuple[Figure, list[Annotation]]:
    """The Pareto chart and its concurrency labels: step curves of accurate points per system and
    gate kind, failing points drawn as crosses. A curve with no accurate point draws nothing and
    so has no legend entry (its crosses have theirs)."""
    fig, ax = plt.subplots(figsize=(8, 5.2))
    colours = {label: f"C{k % 10}" for k, label in enumerate(_by_label(points))}
    top = 0.0
    labelled: list[tuple[str, float, float]] = []
    crosses: list[tuple[float, float]] = []
    for (label, note), pts in curves(points).items():
        color = colours[label]
        style = "--" if note else "-"
        good = [_rescaled(p, y(p)) if y is not None else p for p in pts if p.accurate]
        ys: list[float] = []
        if good:
            xs, ys = step_curve(frontier(good))
            ax.plot(xs, ys, linestyle=style, color=color, label=curve_name(label, note, pts))
            ax.scatter(
                [p.per_user_tps for p in good],
                [p.throughput_tps for p in good],
                color=color,
                zorder=3,
                s=22,
                marker="o" if not note else "D",
            )
            labelled += [(f"C={p.concurrency:,}", p.per_user_tps, p.throughput_tps) for p in good]
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
            crosses += [(p.per_user_tps, y(p) if y else p.throughput_tps) for p in bad]
        top = max([top, *ys, *((y(p) if y else p.throughput_tps) for p in bad)])
    ax.set_xlabel("per-user speed (output tok/s per user)")
    ax.set_ylabel(y_label)
    ax.set_xlim(left=0)
    zero_based(ax, [top])
    token_axis(ax.xaxis)
    token_axis(ax.yaxis)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1)
    ax.set_title(title)
    return fig, label_points(fig, ax, labelled, crosses)


def pareto_chart(
    points: Sequence[Point],
    path: Path,
    *,
    y_label: str = "system throughput (output tok/s)",
    y: Callable[[Point], float] | None = None,
    title: str = "Throughput vs per-user speed (measured points, step frontier)",
) -> Path:
    """The Pareto chart (`pareto_figure`) saved as a PNG."""
    fig, _ = pareto_figure(points, y_label=y_label, y=y, title=title)
    return save_png(fig, path, dpi=110)


def _rescaled(p: Point, throughput: float) -> Point:
    return replace(p, throughput_tps=throughput)


def metric_chart(
    points: Sequence[Point],
    path: Path,
    metric: Callable[[Point], float | None],
    y_label: str,
    *,
    title: str,
    tokens: bool = False,
    counts: bool = False,
) -> Path:
    """One non-negative metric against concurrency (log2, ticked 1, 2, 4 …), a line per system;
    `tokens`: the metric is a token count or rate (labelled 12k); `counts`: whole numbers."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    values: list[float] = []
    for k, (label, pts) in enumerate(_by_label(points).items()):
        known = [(p.concurrency, v) for p in pts if (v := metric(p)) is not None]
        if known:
            xs, ys = zip(*known, strict=True)
            ax.plot(xs, ys, marker="o", color=f"C{k % 10}", label=label)
            values += ys
    concurrency_axis(ax, [p.concurrency for p in points])
    zero_based(ax, values)
    (token_axis if tokens else count_axis if counts else number_axis)(ax.yaxis)
    ax.set_xlabel("concurrency (users)")
    ax.set_ylabel(y_label)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if values:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no point measured this", ha="center", va="center", transform=ax.transAxes, color="#666666")
    return save_png(fig, path, dpi=110)
