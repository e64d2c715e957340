"""The prefix KV cache of one replica: chained block hashes, capacity in tokens, LRU eviction.

Like vLLM's automatic prefix caching, a prompt hits the longest run of its leading full blocks
that are resident, and a hit is always a whole number of blocks. At least one prompt token is
always computed (the engine needs logits of the last position), so a fully cached prompt gives
back its last block. Simplification, documented: resident blocks are not pinned while their
request runs (a real engine cannot evict those); with realistic capacities this changes little.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence


class PrefixCache:
    def __init__(self, block_size: int, capacity_tokens: int | None) -> None:
        self.block_size = block_size
        #: None = unlimited; 0 disables caching entirely.
        self.capacity_blocks = None if capacity_tokens is None else capacity_tokens // block_size
        self._lru: OrderedDict[Hashable, None] = OrderedDict()
        self.evicted_blocks = 0

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def resident_tokens(self) -> int:
        return len(self._lru) * self.block_size

    def match(self, blocks: Sequence[Hashable], prompt_tokens: int) -> int:
        """Cached tokens of a prompt with these leading full-block hashes; touches the hits."""
        lru = self._lru
        n = 0
        for h in blocks:
            if h not in lru:
                break
            n += 1
        if n and n * self.block_size >= prompt_tokens:
            n -= 1
        for h in reversed(blocks[:n]):
            lru.move_to_end(h)
        return n * self.block_size

    def clear(self) -> None:
        """Forget every block (`POST /reset_prefix_cache`); the eviction counter keeps counting, as
        an engine's counters do across a reset."""
        self._lru.clear()

    def insert(self, blocks: Sequence[Hashable]) -> None:
        """Make these blocks resident, evicting the least recently used beyond capacity."""
        if self.capacity_blocks == 0:
            return
        lru = self._lru
        # Tail blocks become the least recent, so eviction trims a prefix from its end (as
        # vLLM's free queue does) instead of cutting its head and orphaning the rest.
        for h in reversed(blocks):
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
        if self.capacity_blocks is not None:
            while len(lru) > self.capacity_blocks:
                lru.popitem(last=False)
                self.evicted_blocks += 1
