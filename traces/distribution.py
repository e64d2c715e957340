"""The one summary of a list of values trajbench uses everywhere (replay's result files, the
`traces stats` tables, the data cards): count, total, min, max, mean, sample standard deviation
and the percentile grid, each percentile an observed value (numpy `method="lower"`, docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The percentile grid, highest first (docs/metrics.md).
PERCENTILES = (99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0)


def pct_key(p: float) -> str:
    """The key of a percentile in every summary: "99.9", "50.0" (the reference's spelling)."""
    return str(float(p))


def percentiles(a: np.ndarray[Any, Any]) -> dict[str, float]:
    """The grid's percentiles of a non-empty array, keyed by `pct_key`."""
    return {
        pct_key(p): float(v) for p, v in zip(PERCENTILES, np.percentile(a, PERCENTILES, method="lower"), strict=True)
    }


@dataclass(frozen=True)
class Distribution:
    """n values summarised; the statistics are None when there are no values."""

    n: int
    total: float
    min: float | None
    max: float | None
    avg: float | None
    std_dev: float | None
    percentiles: dict[str, float | None]

    def p(self, q: float) -> float | None:
        """The q-th percentile (q as in the grid: 50, 90, 99.9)."""
        return self.percentiles.get(pct_key(q))


def distribution(values: Sequence[float]) -> Distribution:
    """The summary of `values`; n=0 and nulls when empty, so a summary always has its keys."""
    if not len(values):
        return Distribution(0, 0, None, None, None, None, {pct_key(p): None for p in PERCENTILES})
    a = np.asarray(values, dtype=np.float64)
    pct: dict[str, float | None] = dict(percentiles(a))
    return Distribution(
        int(a.size),
        float(a.sum()),
        float(a.min()),
        float(a.max()),
        float(a.mean()),
        float(a.std(ddof=1)) if a.size > 1 else 0.0,
        pct,
    )
