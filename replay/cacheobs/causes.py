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


def drifted(*, ideal: int, checked: bool, engine_divergence: int | None, count_mismatch: bool) -> bool:
    """The engine's tokens part from the client's inside the ideal reusable prefix, so its cache
    key is not the one the client expects: by a template check of this turn or the session's
    previous turn when one covers it (a checked, identical prompt is no drift), else by the count."""
    if checked:
        return engine_divergence is not None and engine_divergence < ideal
    return count_mismatch


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
