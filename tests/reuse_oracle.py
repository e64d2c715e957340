"""Ideal within-trajectory prefix reuse at message granularity: an oracle the analysis tests
check `traces stats` against (built from the same prompt plan, counted a simpler way)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from traces import Shards
from traces.analysis.reuse import Reuse, plan_within, prompt_plan, salted_system, system_segment


def ideal_within_reuse(
    shards: str | Path | Shards, count: Callable[[str], int] = len, *, salt_mode: str | None = None
) -> Reuse:
    """Ideal within-trajectory prefix reuse of a shard folder, at message granularity.

    Each turn may reuse the longest run of leading segments (system message, tool list, other
    messages) that it shares with the same trajectory instance's previous prompt; `count(text)`
    gives a segment's size (default: characters; pass e.g. `lambda s: len(tok.encode(s))` for
    tokens). Every turn's full prompt counts in `total`. No block rounding, no cross-trajectory
    reuse. `salt_mode` recomputes the system message (default: as built).
    """
    sh = shards if isinstance(shards, Shards) else Shards(shards)
    reused = total = 0
    for inst in sh:
        plan = prompt_plan(sh, inst)
        system = plan.stored_system if salt_mode is None else salted_system(plan, salt_mode, sh.options.seed)
        system_units = count(system_segment(system)) if system else 0
        r, t = plan_within(plan, [[count(s) for s in new] for _, new in plan.steps], system_units)
        reused += r
        total += t
    return Reuse(reused, total)
