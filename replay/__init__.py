"""replay: stream shard turns closed-loop to an OpenAI-compatible endpoint and measure them."""

from __future__ import annotations

from .errors import ReplayError

__all__ = sorted(["ReplayError"])
