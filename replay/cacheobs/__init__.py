"""Why each turn missed the cache: the per-turn cache deficit of a run, attributed to one cause
(`trajbench analyze cache`, docs/cache.md)."""

from __future__ import annotations

from .analysis import CacheOptions, CacheResult, SweepCacheResult, analyse_cache, analyse_run, analyse_sweep
from .model import CAUSES, CHARTS, RULES, SWEEP_CHART, CacheAnalysis, CacheTurn, CauseTotal
from .table import cause_table, warnings

__all__ = [
    "CAUSES",
    "CHARTS",
    "RULES",
    "SWEEP_CHART",
    "CacheAnalysis",
    "CacheOptions",
    "CacheResult",
    "CacheTurn",
    "CauseTotal",
    "SweepCacheResult",
    "analyse_cache",
    "analyse_run",
    "analyse_sweep",
    "cause_table",
    "warnings",
]
