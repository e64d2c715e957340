"""Dataset analysis: lengths and context growth, prefix reuse under each salt mode, an LRU
KV-cache simulation, the statistics file (`Stats`, stats.json), its tables and its plots
(`trajbench traces stats`)."""

from __future__ import annotations

from .plots import write_plots
from .stats import StatsOptions, StatsResult, analyse, compute_stats, default_cache_sizes
from .statsfile import ReuseFailed, Stats
from .table import fmt_number, stats_tables

__all__ = [
    "ReuseFailed",
    "Stats",
    "StatsOptions",
    "StatsResult",
    "analyse",
    "compute_stats",
    "default_cache_sizes",
    "fmt_number",
    "stats_tables",
    "write_plots",
]
