"""Attributing each turn's cache deficit to exactly one cause, first rule that holds wins
(`model.RULES`, docs/cache.md), and guessing the engine's block size when none is given."""

from __future__ import annotations

import math
from collections.abc import Iterable


def infer_block_size(cached: Iterable[int]) -> int | None:
    """The gcd of the positive cached counts: engines cache whole blocks, so every count is a
    multiple of the block size (an overestimate when the counts share a larger factor)."""
    g = 0
    for c in cached:
        if c > 0:
            g = math.gcd(g, c)
    return g or None


def count_mismatch(server_prompt_tokens: int | None, isl: int, block_size: int) -> bool:
    """The server counted the prompt otherwise by more than a block: it rendered or tokenised
    another prompt than the client counted (another template or vocabulary)."""
    return server_prompt_tokens is not None and abs(server_prompt_tokens - isl) > block_size


def drift_evidence(*, ideal: int, checked: bool, inside_divergence: int | None, count_mismatch: bool) -> str | None:
    """What shows the engine's tokens part from the client's inside the ideal reusable prefix (its
    cache key is then not the one the client expects): "check" when a template check covers the
    turn and diverged inside its own prompt before the ideal (a checked, identical prompt, or one
    the engine only extends, is no drift); else "count" when the server counted the prompt
    otherwise, which says only that another prompt was rendered or tokenised (another template or
    vocabulary), not where; None without evidence."""
    if checked:
        return "check" if inside_divergence is not None and inside_divergence < ideal else None
    return "count" if count_mismatch else None


def attribute(
    *,
    deficit: int,
    block_size: int,
    within: int,
    cross: int,
    replica: str | None,
    prev_replica: str | None,
    pressure_tokens: int,
    evictions_rose: float | None,
    drift: bool = False,
) -> str:
    """The one cause of a turn's deficit (see `model.RULES` for the rules in words)."""
    if deficit <= 0:
        return "none"
    if deficit <= block_size:
        return "block_granularity"
    if within == 0 and deficit <= cross + block_size:
        return "marker_salt"
    if replica is not None and prev_replica is not None and replica != prev_replica:
        return "affinity_miss"
    if pressure_tokens > 0 and (evictions_rose is None or evictions_rose > 0):
        return "eviction"
    if drift:
        return "template_drift"
    return "unexplained"
