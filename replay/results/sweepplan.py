"""sweep.json: a sweep's plan and each point's status, the file `replay sweep` keeps and the
report, the cache analysis and the checks read (docs/files.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import traces

from .layout import SWEEP_FILE


@dataclass(frozen=True)
class SweepPoint:
    concurrency: int
    dir: str  # the point's run folder, inside the sweep folder
    status: str  # pending, running, done, interrupted or failed


@dataclass(frozen=True)
class SweepPlan(traces.JsonFile):
    """sweep.json: the sweep's base options, its concurrencies and each point's status."""

    FILE = SWEEP_FILE

    base: dict[str, Any]
    concurrencies: list[int]
    points: list[SweepPoint]
