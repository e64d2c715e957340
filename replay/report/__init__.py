"""What a person reads: the run's live status line, the sweep table, the Pareto frontier and
its points, the charts and the HTML/text report (docs/files.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .display import RunState, run_progress
from .regions import Region, concurrency_regions, describe_regions, region_concurrencies
from .sweep_table import point_line, read_numbers, sweep_table

if TYPE_CHECKING:
    from .page import build_report
    from .pareto import Point, frontier
    from .points import Gates, GatesOf, PointSet, Replaced, collect_points


__all__ = [
    "Gates",
    "GatesOf",
    "Point",
    "PointSet",
    "Region",
    "Replaced",
    "RunState",
    "build_report",
    "collect_points",
    "concurrency_regions",
    "describe_regions",
    "frontier",
    "point_line",
    "read_numbers",
    "region_concurrencies",
    "run_progress",
    "sweep_table",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".page": ("build_report",),
    ".pareto": ("Point", "frontier"),
    ".points": ("Gates", "GatesOf", "PointSet", "Replaced", "collect_points"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
