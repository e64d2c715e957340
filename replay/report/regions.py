"""The concurrency regions of the Endpoints rules (§5.4 "Regions of interest", §5.5 the boundary
algorithm) and the points `replay sweep --regions` places in them (docs/submitting.md).

The rules split concurrency into four regions. The ultra-low region is 1..C_min, where C_min
(1 to 32) is the low-latency point; the rest, C_min + 1 .. C_max (the highest concurrency the
submitter measures), is cut into three regions of equal width in log2(C - C_min): low, medium
and high. Boundaries are rounded half to even, as Python's `round` does. A submission has at
least 7 points, 1 + 3 + 3: one in the ultra-low region, one in each of the other three (these 4
are the mandatory points, where the SWE-bench runs are made, docs/accuracy.md), and 3 of the
submitter's choice; at most 32.

`--regions` takes C_min = 1 and places the 6 other points evenly in log2(C - 1): each of the
three regions gets its middle and its end, so every region holds a point and the top point is
C_max. Where rounding makes two points meet (a small C_max), the next free integers fill in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ReplayError

#: The rules' cap on one submission's points (§5.6).
MAX_POINTS = 32
#: The rules' minimum (§5.3): 1 + 3 + 3.
MIN_POINTS = 7
#: The highest low-latency point C_min the rules allow (the ultra-low region is 1..32).
ULTRA_LOW_MAX = 32


@dataclass(frozen=True)
class Region:
    """One region of interest: its name and its concurrencies, `start` to `end` inclusive
    (empty when `end` < `start`, where rounding made two boundaries meet)."""

    name: str
    start: int
    end: int

    def holds(self, concurrency: int) -> bool:
        return self.start <= concurrency <= self.end


def concurrency_regions(c_max: int, c_min: int = 1) -> tuple[Region, ...]:
    """The four regions of the rules (§5.4, §5.5) for the low-latency point `c_min` and the
    highest measured concurrency `c_max`: ultra-low, low, medium, high."""
    if not 1 <= c_min <= ULTRA_LOW_MAX:
        raise ReplayError(f"the low-latency point must be 1 to {ULTRA_LOW_MAX} (the ultra-low region), got {c_min}")
    if c_max <= c_min:
        raise ReplayError(f"--max-concurrency {c_max}: must be above the low-latency point {c_min}")
    width = math.log2(c_max - c_min) / 3
    low_end = round(c_min + 2**width)
    medium_end = round(c_min + 2 ** (2 * width))
    return (
        Region("ultra-low", 1, c_min),
        Region("low", c_min + 1, low_end),
        Region("medium", low_end + 1, medium_end),
        Region("high", medium_end + 1, c_max),
    )


def region_concurrencies(max_concurrency: int) -> list[int]:
    """The points of `replay sweep --regions`: 1 (the low-latency point), then C = 1 + 2^(k·w/2)
    for k = 1..6, w the regions' log2 width, rounded: each region's middle and end. Small ranges
    whose rounded points meet are filled with the next free integers, up to 7 points."""
    if max_concurrency < 1:
        raise ReplayError(f"--max-concurrency must be >= 1, got {max_concurrency}")
    if max_concurrency == 1:
        return [1]
    width = math.log2(max_concurrency - 1) / 3
    chosen = {1, max_concurrency} | {min(max_concurrency, max(2, round(1 + 2 ** (k * width / 2)))) for k in range(1, 6)}
    fill = 2
    while len(chosen) < min(MIN_POINTS, max_concurrency):
        chosen.add(fill)
        fill += 1
    return sorted(chosen)


def describe_regions(concurrencies: list[int], c_max: int, c_min: int = 1) -> str:
    """`ultra-low 1: 1; low 2-5: 3, 5; …`: each region's range and the given points in it."""
    parts = []
    for r in concurrency_regions(c_max, c_min):
        span = f"{r.start}" if r.start == r.end else f"{r.start}-{r.end}" if r.end > r.start else "(empty)"
        inside = ", ".join(str(c) for c in concurrencies if r.holds(c)) or "no point"
        parts.append(f"{r.name} {span}: {inside}")
    return "; ".join(parts)
