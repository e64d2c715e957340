"""The terminal form of a cache analysis: one rich table of causes and a line of totals."""

from __future__ import annotations

from rich import box
from rich.table import Table

from .model import CacheAnalysis


def cause_table(a: CacheAnalysis) -> Table:
    t = Table(
        title=(
            f"Cache deficit of {a.run}: {a.cached_tokens:,} of {a.ideal_tokens:,} ideal tokens cached "
            f"({a.hit_rate_of_ideal:.1%}), {a.turns:,} turns, block {a.block_size} ({a.block_size_source})"
        ),
        box=box.SIMPLE_HEAD,
    )
    t.add_column("cause")
    t.add_column("turns", justify="right")
    t.add_column("deficit tokens", justify="right")
    t.add_column("share", justify="right")
    for c in a.causes:
        t.add_row(c.cause, f"{c.turns:,}", f"{c.deficit_tokens:,}", f"{c.share:.1%}")
    return t
