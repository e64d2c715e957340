"""Early-stopping percentile estimates (MLPerf LoadGen's rule), as the reference's summary has them.

A latency percentile measured on n samples is a point estimate; the early-stopping estimate is a
conservative bound: the value such that, with 99 % confidence, the true p-th percentile does not
exceed it. With t samples allowed above the bound, the run needs at least `min_passing(t)`
samples at or below it, where `min_passing(t)` is the smallest h with

    P(at most t of h + t samples are over | the over-rate is 1 - p) < 1 - confidence,

a binomial tail, equal to the regularised incomplete beta I_p(h, t + 1). The estimate is the
t-th highest sample for the largest t the run can absorb (t - 1 samples discarded above it), and
none when even t = 1 needs more samples than the run has. Percentiles are in the report's
convention (0-100); only those from the median up to below 100 get an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.99


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            step = c * d
            h *= step
        if abs(step - 1.0) < 3e-16:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


def min_passing(t: int, p: float, confidence: float = CONFIDENCE) -> int:
    """The fewest samples at or below the bound that, beside `t` above it, certify the
    p-quantile (p a fraction) at `confidence`; the tail probability falls as h grows."""
    target = 1.0 - confidence

    def passes(h: int) -> bool:
        return incomplete_beta(h, t + 1, p) < target

    hi = 2
    while not passes(hi):
        hi *= 2
    lo = hi // 2 + 1 if hi > 2 else 1
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def samples_above(n: int, p: float, confidence: float = CONFIDENCE) -> int:
    """The largest t >= 1 with min_passing(t) + t <= n, or 0 when n is too small for t = 1."""

    def fits(t: int) -> bool:
        return min_passing(t, p, confidence) + t <= n

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def estimate(sorted_values: Sequence[float], percentile: float, confidence: float = CONFIDENCE) -> float | None:
    """The early-stopping bound of `percentile` (0-100) over ascending values, or None."""
    t = samples_above(len(sorted_values), percentile / 100.0, confidence)
    return None if t == 0 else float(sorted_values[len(sorted_values) - t])


def estimates(sorted_values: Sequence[float], grid: Sequence[float]) -> dict[str, float | None]:
    """{"99.9": bound, …} for every grid percentile from the median up to below 100."""
    return {str(float(p)): estimate(sorted_values, p) for p in grid if 50.0 <= p < 100.0}
