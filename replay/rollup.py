"""Summaries of a list of values: the reference's metric rollup and trajbench's distribution.

`rollup` has the shape of a metric in the reference client's `result_summary.json` (total, min,
max, median, avg, std_dev, percentiles keyed "99.9" … "1.0", early-stopping estimates for latency
metrics, a 30-bucket log-spaced histogram), so its Report reader and tools load our files.
`distribution` is trajbench's own, flatter form with the count. Both take exact percentiles of
observed values (numpy `method="lower"`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .early_stopping import estimates
from .numbers import PERCENTILES, Distribution, Metric, pct_key

HISTOGRAM_BUCKETS = 30


def _percentiles(a: np.ndarray) -> dict[str, float]:
    return {pct_key(p): float(v) for p, v in zip(PERCENTILES, np.percentile(a, PERCENTILES, method="lower"))}


def _std(values: Sequence[int] | Sequence[float], total: float) -> float:
    """Sample standard deviation from the running sums, as the reference computes it (the sum of
    squares in floating point, accumulated in arrival order), so the two agree to the last bit."""
    n = len(values)
    if n < 2:
        return 0.0
    sum_sq = float(sum(v * v for v in values))
    return math.sqrt(max(0.0, (sum_sq - total * total / n) / (n - 1)))


def _histogram(a: np.ndarray, lo: float, hi: float) -> dict[str, list[Any]]:
    low = max(float(lo), 1.0)
    high = max(float(hi), low * 10.0)
    step = (math.log(high) - math.log(low)) / HISTOGRAM_BUCKETS
    edges = [math.exp(math.log(low) + i * step) for i in range(HISTOGRAM_BUCKETS + 1)]
    counts, _ = np.histogram(np.clip(a, edges[0], edges[-1]), bins=edges)
    return {"buckets": [[edges[i], edges[i + 1]] for i in range(HISTOGRAM_BUCKETS)], "counts": [int(c) for c in counts]}


def rollup(values: Sequence[int] | Sequence[float], *, early_stopping: bool = False) -> Metric:
    """The reference's metric dict; `{}` when there are no values (with the all-null
    early-stopping map when that is on, as the reference writes it)."""
    if not values:
        return {"early_stopping_percentiles": estimates([], PERCENTILES)} if early_stopping else {}
    a = np.asarray(values)
    a.sort()
    total = sum(values)
    out: dict[str, Any] = {"total": total, "min": a[0].item(), "max": a[-1].item()}
    pct = _percentiles(a)
    out.update(median=pct["50.0"], avg=total / len(values), std_dev=_std(values, total), percentiles=pct)
    if early_stopping:
        out["early_stopping_percentiles"] = estimates(a.tolist(), PERCENTILES)
    out["histogram"] = _histogram(a, out["min"], out["max"])
    return out


def distribution(values: Sequence[float]) -> Distribution:
    """n, total, min, max, avg, std_dev (sample) and percentiles; n=0 and nulls when empty, so a
    summary always has the keys."""
    if not values:
        return Distribution(0, 0, None, None, None, None, {pct_key(p): None for p in PERCENTILES})
    a = np.asarray(values, dtype=np.float64)
    pct: dict[str, float | None] = dict(_percentiles(a))
    return Distribution(
        int(a.size), float(a.sum()), float(a.min()), float(a.max()), float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0, pct
    )
