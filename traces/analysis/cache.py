"""The prefix cache model of the reuse analysis: a radix tree of block runs with LRU eviction,
and the two replays over it (ideal reuse with unlimited capacity, and hit fraction by capacity).

The tree has SGLang RadixAttention's shape: a turn touches its whole path, then the least recently
used leaf loses its *last* blocks first (vLLM frees a sequence's tail blocks first too), so what
stays cached of a trajectory is always a prefix. Nodes are runs of blocks, not blocks, and a
trajectory that grows extends its own leaf in place, so a turn costs a few tree steps whatever
its length. Blocks are compared by chained hash (`reuse`), so a run of equal last
hashes is a run of equal prefixes and one comparison decides a whole run.

Replay order: C slots each take the next instance from one FIFO and send its turns one per round.
Round-robin over the slots stands in for closed loop with equal turn times; a real run interleaves
by response time. Blocks of requests in flight are not pinned.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from .reuse import InstanceStream


def closed_loop_order(lengths: Sequence[int], concurrency: int) -> Iterator[tuple[int, int]]:
    """(instance, turn) in the order C users replay them: each slot takes the next instance from
    one FIFO and sends its turns one per round; round-robin over slots approximates closed loop
    with equal turn times (real runs interleave by response time)."""
    fifo = iter(range(len(lengths)))
    slots: list[list[int] | None] = []
    for _ in range(max(1, concurrency)):
        k = next(fifo, None)
        slots.append(None if k is None else [k, 0])
    while any(s is not None for s in slots):
        for i, slot in enumerate(slots):
            if slot is None:
                continue
            yield slot[0], slot[1]
            slot[1] += 1
            if slot[1] >= lengths[slot[0]]:
                k = next(fifo, None)
                slots[i] = None if k is None else [k, 0]


# ------------------------------------------------------------------ radix LRU cache
class _Node:
    __slots__ = ("chain", "children", "end", "parent", "stamp", "start")

    def __init__(self, parent: _Node | None, chain: np.ndarray, start: int, end: int, stamp: int) -> None:
        self.parent = parent
        self.children: dict[int, _Node] = {}
        self.chain = chain
        self.start = start
        self.end = end
        self.stamp = stamp


class RadixLRU:
    """A prefix cache of blocks with LRU eviction of leaf tails; `capacity=None` is unlimited."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.root = _Node(None, np.empty(0, dtype=np.uint64), 0, 0, 0)
        self.size = 0
        self.clock = 0
        self._heap: list[tuple[int, int, _Node]] = []
        self._seq = itertools.count()

    def access(self, chain: np.ndarray, n: int) -> int:
        """Send a prompt whose blocks are `chain[:n]`; return how many leading blocks were cached,
        then cache all of them and evict down to capacity."""
        self.clock += 1
        node, pos = self.root, 0
        while pos < n:
            child = node.children.get(int(chain[pos]))
            if child is None:
                break
            start = child.start
            length = child.end - start
            e = length if length < n - pos else n - pos
            # chained hashes: equal last hashes mean the whole run matches (the common case)
            if child.chain[start + e - 1] == chain[pos + e - 1]:
                m = e
            else:
                m = int(np.argmin(child.chain[start : start + e] == chain[pos : pos + e]))
            if m < length and pos + m < n:
                child = self._split(node, child, m)
            child.stamp = self.clock
            node, pos = child, pos + m
            if m < e:
                break
        matched = pos
        if pos < n:
            if node is not self.root and not node.children and node.end == pos:
                node.chain, node.end = chain, n  # the trajectory grew: extend its leaf in place
            else:
                leaf = _Node(node, chain, pos, n, self.clock)
                node.children[int(chain[pos])] = leaf
                node = leaf
            self.size += n - pos
        if node is not self.root and not node.children:
            self._push(node)
        if self.capacity is not None and self.size > self.capacity:
            self._evict()
        return matched

    def _split(self, parent: _Node, child: _Node, m: int) -> _Node:
        inner = _Node(parent, child.chain, child.start, child.start + m, child.stamp)
        parent.children[int(child.chain[child.start])] = inner
        child.start += m
        child.parent = inner
        inner.children[int(child.chain[child.start])] = child
        return inner

    def _push(self, node: _Node) -> None:
        heapq.heappush(self._heap, (node.stamp, next(self._seq), node))

    def _evict(self) -> None:
        assert self.capacity is not None
        while self.size > self.capacity and self._heap:
            stamp, _, node = heapq.heappop(self._heap)
            if node.stamp != stamp or node.children or node.parent is None or node.end <= node.start:
                continue  # a stale entry: the node was touched, grew children, or is gone
            k = min(self.size - self.capacity, node.end - node.start)
            node.end -= k
            self.size -= k
            if node.end > node.start:
                self._push(node)
                continue
            parent = node.parent
            del parent.children[int(node.chain[node.start])]
            node.parent = None
            if parent is not self.root and not parent.children:
                self._push(parent)


# ------------------------------------------------------------------ the two analyses
def _lcp(a: np.ndarray, b: np.ndarray) -> int:
    e = min(len(a), len(b))
    if e == 0:
        return 0
    eq = a[:e] == b[:e]
    return e if eq.all() else int(np.argmin(eq))


def ideal_reuse(streams: Sequence[InstanceStream], block_size: int, concurrency: int) -> dict[str, dict[str, int]]:
    """Per domain (and `all`): units sent, reusable from the same instance's earlier turns
    (`within`) and additionally from anything sent before in replay order (`cross`), with an
    unlimited block cache."""
    cache = RadixLRU(None)
    acc: dict[str, dict[str, int]] = {}
    seen: dict[int, list[tuple[int, int]]] = {}  # instance → (chain, blocks) sent so far
    for k, t in closed_loop_order([len(s.turns) for s in streams], concurrency):
        s = streams[k]
        turn = s.turns[t]
        chain = s.chains[turn.chain]
        within = 0
        for c, nb in seen.get(k, []):
            within = max(within, nb if c == turn.chain else _lcp(s.chains[c][:nb], chain[: turn.blocks]))
        within = min(within, turn.blocks)
        hit = cache.access(chain, turn.blocks)
        seen.setdefault(k, []).append((turn.chain, turn.blocks))
        if len(seen[k]) > 2:  # chains only grow, so the latest prompt of each chain suffices
            seen[k] = _latest_per_chain(seen[k])
        for dom in ("all", s.domain):
            d = acc.setdefault(dom, {"units": 0, "within": 0, "cross": 0})
            d["units"] += turn.units
            d["within"] += within * block_size
            d["cross"] += (hit - within) * block_size
        if t == len(s.turns) - 1:
            seen.pop(k, None)
    return acc


def _latest_per_chain(entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
    best: dict[int, int] = {}
    for c, nb in entries:
        best[c] = max(best.get(c, 0), nb)
    return sorted(best.items())


def lru_curve(
    streams: Sequence[InstanceStream], block_size: int, concurrency: int, capacities: Iterable[int | None]
) -> list[tuple[int | None, float]]:
    """(capacity in units, hit fraction of input units) of an LRU prefix cache per capacity
    (None = unlimited) for `concurrency` users replaying closed loop."""
    order = list(closed_loop_order([len(s.turns) for s in streams], concurrency))
    total = sum(streams[k].turns[t].units for k, t in order)
    out: list[tuple[int | None, float]] = []
    for cap in capacities:
        cache = RadixLRU(None if cap is None else cap // block_size)
        hit = 0
        for k, t in order:
            s = streams[k]
            turn = s.turns[t]
            hit += cache.access(s.chains[turn.chain], turn.blocks)
        out.append((cap, hit * block_size / total if total else 0.0))
    return out
