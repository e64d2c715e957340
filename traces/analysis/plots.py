"""PNG plots of `traces stats`: context growth, prefix reuse lost to salting, the LRU curve.

Each plot is a pure function of the statistics (`Stats`), so cards and reports can redraw them. matplotlib
draws with fixed sizes and saves through `traces.png` (no varying metadata), so the same stats
give the same bytes with one matplotlib version. Every plot has a title, token counts read in
decimal units (64k, 1M: k = 1,000), and non-negative axes start at zero.
"""

from __future__ import annotations

from pathlib import Path

from ..png import count_axis, log_token_axis, plt, save_png, token_axis, tokens
from .stats import reuse_lost
from .statsfile import Stats

_COLOURS = {"all": "#444444", "coding": "#1f77b4", "workflow": "#d62728"}
PLOTS = ("isl_growth.png", "prefix_reuse.png", "lru_hit_curve.png")
#: The salt mode the others are compared with: what a cache could reuse with no salting at all.
BASELINE = "none"


def plot_growth(stats: Stats, path: Path) -> Path:
    """ISL against client turn index: median line and a band up to p90, per domain; on a second
    axis, how many trajectories reach each turn (a long tail of turns is a handful of them)."""
    unit = stats.units.lengths
    fig, ax = plt.subplots(figsize=(7, 4.6))
    remaining = ax.twinx()
    top = 0
    for dom, rows in sorted(stats.growth.items()):
        colour = _COLOURS.get(dom, None)
        remaining.step(
            [r.turn_index for r in rows],
            [r.n for r in rows],
            where="post",
            color=colour,
            linestyle=":",
            linewidth=1,
            label=f"{dom} trajectories reaching the turn",
        )
        top = max([top, *(r.n for r in rows)])
        # indices reached by only one or two instances make the bands noise; stats.json keeps them
        floor = min(3, max(r.n for r in rows)) if rows else 0
        rows = [r for r in rows if r.n >= floor]
        x = [r.turn_index for r in rows]
        p50 = [r.p50 for r in rows]
        p90 = [r.p90 for r in rows]
        ax.plot(x, p50, color=colour, label=f"{dom} median")
        ax.fill_between(x, p50, p90, color=colour, alpha=0.2, label=f"{dom} median–p90")
    ax.set_xlabel("client turn index (0-based)")
    ax.set_ylabel(f"input length ({unit})")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    token_axis(ax.yaxis)
    remaining.set_ylabel("trajectories still running")
    remaining.set_ylim(0, max(top, 1) * 1.05)
    count_axis(remaining.yaxis)
    ax.set_title("Context growth per turn, and trajectories still running")
    ax.grid(alpha=0.3)
    if stats.growth:
        lines, labels = ax.get_legend_handles_labels()
        more, more_labels = remaining.get_legend_handles_labels()
        ax.legend(
            lines + more, labels + more_labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3
        )
    return save_png(fig, path)


def plot_reuse(stats: Stats, path: Path) -> Path:
    """What each salt mode costs a prefix cache: the input it must compute that it could reuse
    with no salting (misses with the salt minus misses without), and of that the reuse across
    trajectories that the salt removes. The modes differ by tenths of a percent of the input,
    invisible as bars of 97 % and 98 % on a 0–1 axis, yet that is whole prompts of tokens."""
    unit = stats.units.reuse
    costs = reuse_lost(stats.reuse, BASELINE)
    baseline = stats.reuse.get(BASELINE)
    base = baseline.get("all") if isinstance(baseline, dict) else None
    modes = [m for m, v in costs.items() if "all" in v]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.set_title(f"Prefix reuse lost to salting, vs no salting (blocks of {stats.options.block_size})")
    if base is None or not modes:
        ax.text(0.5, 0.5, "no salt mode to compare with no salting", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return save_png(fig, path)

    lost = [costs[m]["all"].lost for m in modes]
    ax.bar(modes, lost, color="#d62728", width=0.5, label="input to compute that no salting reuses")
    for i, (m, n) in enumerate(zip(modes, lost, strict=True)):
        ax.annotate(
            f"{'+' if n >= 0 else ''}{tokens(n)} {unit} ({n / base.units:+.2%} of input)\n"
            f"cross-trajectory reuse lost: {tokens(costs[m]['all'].cross_lost)}",
            (i, max(n, 0.0)),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
    ax.set_ylim(min(0.0, *lost), max(max(lost) * 1.3, 1.0))
    token_axis(ax.yaxis)
    ax.set_xlabel("salt mode")
    ax.set_ylabel(f"input lost to the cache ({unit})")
    ax.text(
        0.01,
        0.97,
        f"no salting: {tokens(base.ideal * base.units)} of {tokens(base.units)} input {unit} "
        f"reusable ({base.ideal:.1%})",
        transform=ax.transAxes,
        fontsize=8,
        va="top",
    )
    ax.grid(alpha=0.3, axis="y")
    return save_png(fig, path)


def plot_lru(stats: Stats, path: Path) -> Path:
    """Hit fraction of an LRU prefix cache against its size, with the unlimited ceiling."""
    lru = stats.lru
    unit = stats.units.reuse
    fig, ax = plt.subplots(figsize=(7, 4))
    if lru:
        x = [p.capacity for p in lru.points]
        y = [p.hit_fraction for p in lru.points]
        ax.plot(x, y, marker="o", color="#2ca02c", label=f"LRU, {lru.concurrency:,} users")
        ax.axhline(lru.unlimited, color="#444444", linestyle="--", label=f"unlimited ({lru.unlimited:.1%})")
        ax.set_xscale("log")
        log_token_axis(ax.xaxis, min(x), max(x))
        ax.legend(fontsize=8)
        ax.set_title(f"KV-cache capacity needed (salt {lru.salt}, blocks of {lru.block_size})")
    else:
        ax.set_title("KV-cache capacity needed (no LRU simulation: no salt mode could be replayed)")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(f"cache size ({unit}; k = 1,000, M = 1,000,000)")
    ax.set_ylabel("hit fraction of input")
    ax.grid(alpha=0.3, which="both")
    return save_png(fig, path)


def write_plots(stats: Stats, out_dir: str | Path, prefix: str = "") -> list[Path]:
    """All plots of the statistics into `out_dir`, named `prefix` + each name of `PLOTS`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        plot_growth(stats, out / f"{prefix}{PLOTS[0]}"),
        plot_reuse(stats, out / f"{prefix}{PLOTS[1]}"),
        plot_lru(stats, out / f"{prefix}{PLOTS[2]}"),
    ]
