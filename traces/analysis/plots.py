"""PNG plots of `traces stats`: context growth, ideal prefix reuse per salt mode, the LRU curve.

Each plot is a pure function of the stats dict, so cards and reports can redraw them. matplotlib
draws with fixed sizes and saves through `traces.png` (no varying metadata), so the same stats
give the same bytes with one matplotlib version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..png import plt, save_png

_COLOURS = {"all": "#444444", "coding": "#1f77b4", "workflow": "#d62728"}
PLOTS = ("isl_growth.png", "prefix_reuse.png", "lru_hit_curve.png")


def plot_growth(stats: dict[str, Any], path: Path) -> Path:
    """ISL against client turn index: median line and a band up to p90, per domain."""
    unit = stats["units"]["lengths"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for dom, rows in sorted(stats["growth"].items()):
        # indices reached by only one or two instances make the bands noise; stats.json keeps them
        floor = min(3, max(r["n"] for r in rows)) if rows else 0
        rows = [r for r in rows if r["n"] >= floor]
        x = [r["turn_index"] for r in rows]
        p50 = [r["p50"] for r in rows]
        p90 = [r["p90"] for r in rows]
        colour = _COLOURS.get(dom, None)
        ax.plot(x, p50, color=colour, label=f"{dom} median")
        ax.fill_between(x, p50, p90, color=colour, alpha=0.2, label=f"{dom} median–p90")
    ax.set_xlabel("client turn index (0-based)")
    ax.set_ylabel(f"input length ({unit})")
    ax.set_title("Context growth")
    ax.grid(alpha=0.3)
    if stats["growth"]:
        ax.legend(fontsize=8)
    return save_png(fig, path)


def plot_reuse(stats: dict[str, Any], path: Path) -> Path:
    """Stacked bars per salt mode: ideal within-trajectory and cross-trajectory hit fractions."""
    modes = [m for m, v in stats["reuse"].items() if "all" in v]
    fig, ax = plt.subplots(figsize=(6, 4))
    within = [stats["reuse"][m]["all"]["within"] for m in modes]
    cross = [stats["reuse"][m]["all"]["cross"] for m in modes]
    ax.bar(modes, within, color="#1f77b4", label="within trajectory")
    ax.bar(modes, cross, bottom=within, color="#ff7f0e", label="cross trajectory")
    for i, (w, c) in enumerate(zip(within, cross, strict=True)):
        ax.text(i, w + c + 0.01, f"{w + c:.1%}", ha="center", fontsize=9)
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("salt mode")
    ax.set_ylabel(f"ideal cache-hit fraction of input ({stats['units']['reuse']})")
    ax.set_title(f"Ideal prefix reuse (blocks of {stats['options']['block_size']})")
    ax.legend(fontsize=8, loc="lower right")
    return save_png(fig, path)


def plot_lru(stats: dict[str, Any], path: Path) -> Path:
    """Hit fraction of an LRU prefix cache against its size, with the unlimited ceiling."""
    lru = stats["lru"]
    fig, ax = plt.subplots(figsize=(7, 4))
    if lru:
        x = [p["capacity"] for p in lru["points"]]
        y = [p["hit_fraction"] for p in lru["points"]]
        ax.plot(x, y, marker="o", color="#2ca02c", label=f"LRU, C={lru['concurrency']}")
        ax.axhline(lru["unlimited"], color="#444444", linestyle="--", label=f"unlimited ({lru['unlimited']:.1%})")
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=8)
        ax.set_title(f"KV-cache capacity needed (salt {lru['salt']}, blocks of {lru['block_size']})")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(f"cache size ({stats['units']['reuse']})")
    ax.set_ylabel("hit fraction of input")
    ax.grid(alpha=0.3, which="both")
    return save_png(fig, path)


def write_plots(stats: dict[str, Any], out_dir: str | Path, prefix: str = "") -> list[Path]:
    """All plots of a stats dict into `out_dir`, named `prefix` + each name of `PLOTS`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [
        plot_growth(stats, out / f"{prefix}{PLOTS[0]}"),
        plot_reuse(stats, out / f"{prefix}{PLOTS[1]}"),
        plot_lru(stats, out / f"{prefix}{PLOTS[2]}"),
    ]
