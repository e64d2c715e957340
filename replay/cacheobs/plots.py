"""PNG charts of a cache analysis (docs/cache.md), drawn through `traces.png` so the same rows
give the same bytes: deficit tokens by cause, and the hit rate of the ideal against the delay
before a turn and against its ISL; across a sweep, the hit rate against concurrency."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from traces.png import concurrency_axis, plt, save_png, token_axis

from .model import CAUSES, CHARTS, CacheAnalysis, CacheTurn


def _by_cause(a: CacheAnalysis, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    shown = [c for c in a.causes if c.cause != "none"]
    ax.barh([c.cause for c in shown][::-1], [c.deficit_tokens for c in shown][::-1], color="C3")
    ax.set_xlabel("deficit (tokens the server did not reuse)")
    token_axis(ax.xaxis)
    ax.set_title(f"Cache deficit by cause — {a.run} (block {a.block_size}, {a.block_size_source})")
    return save_png(fig, path)


def _scatter(rows: Sequence[CacheTurn], x_of: str, label: str, title: str, path: Path, *, tokens: bool) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, cause in enumerate(CAUSES):
        pts = [(getattr(r, x_of), r.hit_rate) for r in rows if r.cause == cause and r.hit_rate is not None]
        pts = [(x, y) for x, y in pts if x is not None]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, label=cause, color=f"C{k}")
    ax.set_xlabel(label)
    ax.set_ylabel("cached / ideal reusable prefix")
    ax.set_ylim(0, 1.1)
    if tokens:
        token_axis(ax.xaxis)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title)
    return save_png(fig, path)


def cache_charts(a: CacheAnalysis, rows: Sequence[CacheTurn], out: Path) -> list[Path]:
    return [
        _by_cause(a, out / CHARTS[0]),
        _scatter(
            rows,
            "gap_s",
            "seconds since the session's previous answer ended",
            "Hit rate vs preceding delay",
            out / CHARTS[1],
            tokens=False,
        ),
        _scatter(rows, "isl", "ISL (run tokenizer)", "Hit rate vs ISL", out / CHARTS[2], tokens=True),
    ]


def sweep_chart(points: Sequence[tuple[int, CacheAnalysis]], path: Path) -> Path:
    """Hit rate of the ideal and the deficit's largest causes per concurrency of a sweep."""
    fig, ax = plt.subplots(figsize=(7, 4))
    cs = [c for c, _ in points]
    ax.plot(cs, [a.hit_rate_of_ideal for _, a in points], marker="o", label="cached / ideal")
    for k, cause in enumerate(c for c in CAUSES if c not in ("none", "block_granularity")):
        shares = [a.cause(cause).share for _, a in points]
        if any(shares):
            ax.plot(cs, shares, marker=".", linestyle="--", color=f"C{k + 1}", label=f"deficit share: {cause}")
    concurrency_axis(ax, cs)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction")
    ax.legend(fontsize=8)
    ax.set_title("Cache hit rate of the ideal vs concurrency")
    return save_png(fig, path)
