"""Summaries of a list of values: the reference's metric rollup and trajbench's distribution.

`rollup` has the shape of a metric in the reference client's `result_summary.json` (total, min,
max, median, avg, std_dev, percentiles keyed "99.9" … "1.0", early-stopping estimates for latency
metrics, a 30-bucket log-spaced histogram), so its Report reader and tools load our files.
Its percentiles are `traces.percentiles` (observed values, numpy `method="lower"`), as in every
other summary (`traces.distribution`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from traces import PERCENTILES, percentiles

from .early_stopping import estimates
from .numbers import Metric

HISTOGRAM_BUCKETS = 30


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
    pct = percentiles(a)
    out.update(median=pct["50.0"], avg=total / len(values), std_dev=_std(values, total), percentiles=pct)
    if early_stopping:
        out["early_stopping_percentiles"] = estimates(a.tolist(), PERCENTILES)
    out["histogram"] = _histogram(a, out["min"], out["max"])
    return out
