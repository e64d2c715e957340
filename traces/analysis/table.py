"""The readable terminal form of `traces stats`: rich tables built from the statistics."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from ..sizes import format_size
from .stats import reuse_lost
from .statsfile import ReuseFailed, Stats


def fmt_number(x: Any) -> str:
    """A count or length for a table: thousands separators, two decimals for fractions."""
    if x is None:
        return "–"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.2f}"
    return f"{int(x):,}"


def _pct(x: float) -> str:
    return f"{x:.2%}"


def _cell(x: Any) -> str:
    """A number in the per-domain table, at most 7 characters so that the table fits 80 columns:
    two decimals below 1,000, whole numbers up to 999,999, then millions (M = 1,000,000)."""
    if x is None:
        return "–"
    if abs(x) >= 999_999.5:
        return f"{x / 1e6:,.2f}M"
    if isinstance(x, float) and not x.is_integer() and abs(x) < 1000:
        return f"{x:,.2f}"
    return f"{round(x):,}"


_LABELS = {
    "turns_per_trajectory": "turns/traj",
    "isl": "ISL",
    "delta": "delta",
    "expected_osl": "expected OSL",
    "delay_seconds": "delay s",
}


def stats_tables(stats: Stats) -> list[Table]:
    """Per-domain lengths and delays, ideal reuse per salt mode, and the LRU curve; each fits
    an 80-column terminal without cutting a cell."""
    unit = stats.units.lengths
    dists = Table(title=f"Per domain (lengths in {unit})", box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
    for col in ("domain", "metric", "n", "mean", "p50", "p90", "p99", "max"):
        dists.add_column(col, justify="left" if col in ("domain", "metric") else "right", no_wrap=True)
    for dom, d in stats.domains.items():
        dists.add_row(dom, "trajectories", _cell(d.trajectories), "", "", "", "", "")
        dists.add_row("", "client turns", _cell(d.client_turns), "", "", "", "", "")
        for key, s in d.samples().items():
            dists.add_row("", _LABELS[key], *map(_cell, s.row()))
        dists.add_row("", "delay sum s", "", _cell(d.delay_seconds.total), "", "", "", "", end_section=True)

    unit = stats.units.reuse
    reuse = Table(title=f"Ideal prefix reuse ({unit}, blocks of {stats.options.block_size})")
    for col in ("salt", "domain", "within", "cross", "ideal", f"lost vs none ({unit})"):
        reuse.add_column(col, justify="left" if col in ("salt", "domain") else "right")
    lost = reuse_lost(stats.reuse)
    for mode, by_dom in stats.reuse.items():
        if isinstance(by_dom, ReuseFailed):
            reuse.add_row(mode, "", "n/a", "n/a", by_dom.error[:60], "")
            continue
        for dom, r in by_dom.items():
            cost = lost.get(mode, {}).get(dom)
            shown = "0" if mode == "none" else "" if cost is None else fmt_number(round(cost.lost))
            reuse.add_row(mode, dom, _pct(r.within), _pct(r.cross), _pct(r.ideal), shown)
    exact = stats.reuse_exact_within
    reuse.caption = f"exact message-level within-trajectory reuse: {_pct(exact.fraction)} of {exact.unit}"

    tables = [dists, reuse]
    lru = stats.lru
    if lru:
        curve = Table(title=f"LRU prefix cache, C={lru.concurrency} users, salt {lru.salt}")
        curve.add_column(f"cache size ({stats.units.reuse})", justify="right")
        curve.add_column("hit fraction", justify="right")
        for p in lru.points:
            curve.add_row(format_size(p.capacity), _pct(p.hit_fraction))
        curve.add_row("unlimited", _pct(lru.unlimited))
        tables.append(curve)
    return tables
