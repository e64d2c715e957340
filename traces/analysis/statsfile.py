"""`stats.json` as typed classes (docs/files.md): what `traces stats` computes, what its tables,
plots and the data cards read, and what it writes (sorted keys, rounded numbers, so the same
shards give the same bytes).

Lengths and counts keep whole numbers as integers (`Number`); a sample's summary has nulls when
the sample is empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..contract import JsonFile
from ..shards import STATS_FILE, TokenizerInfo

#: A length, a count or a share: whole numbers stay integers in the file.
Number = int | float


@dataclass(frozen=True)
class Summary:
    """n, mean, p50/p90/p99 (observed values) and max of a sample."""

    n: int
    mean: Number | None
    p50: Number | None
    p90: Number | None
    p99: Number | None
    max: Number | None

    def row(self) -> tuple[Number | None, ...]:
        """n, mean, p50, p90, p99, max: a table's cells, in its columns' order."""
        return (self.n, self.mean, self.p50, self.p90, self.p99, self.max)


@dataclass(frozen=True)
class Delays(Summary):
    """The recorded delays before the turns: their summary, their sum, and how many are not 0."""

    total: Number
    turns_with_delay: int


@dataclass(frozen=True)
class DomainStats:
    trajectories: int
    instances: int
    client_turns: int
    turns_per_trajectory: Summary
    isl: Summary
    delta: Summary
    expected_osl: Summary
    delay_seconds: Delays

    def samples(self) -> dict[str, Summary]:
        """The sampled quantities by field name, in table order."""
        return {
            "turns_per_trajectory": self.turns_per_trajectory,
            "isl": self.isl,
            "delta": self.delta,
            "expected_osl": self.expected_osl,
            "delay_seconds": self.delay_seconds,
        }


@dataclass(frozen=True)
class GrowthPoint:
    """The input length at one client turn index, over the instances that reach it (n >= 1)."""

    turn_index: int
    n: int
    p50: Number
    p90: Number


@dataclass(frozen=True)
class Reuse:
    """Ideal prefix reuse of one domain under one salt mode: shares of its input `units`."""

    units: int
    within: float
    cross: float
    ideal: float


@dataclass(frozen=True)
class ReuseFailed:
    """A salt mode the dataset cannot be salted with, and why."""

    error: str


@dataclass(frozen=True)
class ExactReuse:
    """Exact message-level reuse within each trajectory, under the build's salt."""

    unit: str
    reused: int
    total: int
    fraction: float


@dataclass(frozen=True)
class LruPoint:
    capacity: int
    hit_fraction: float


@dataclass(frozen=True)
class Lru:
    """Hit fraction of an LRU prefix cache by its size, users replaying closed loop."""

    salt: str
    concurrency: int
    block_size: int
    distinct_units: int
    points: list[LruPoint]
    unlimited: float


@dataclass(frozen=True)
class StatsDataset:
    name: str
    content_hash: str
    salt: str
    history_marker: bool
    tokenizer: TokenizerInfo | None


@dataclass(frozen=True)
class Units:
    lengths: str  # "tokens" or "chars"
    reuse: str


@dataclass(frozen=True)
class StatsSettings:
    block_size: int
    concurrency: int


@dataclass(frozen=True)
class Stats(JsonFile):
    """stats.json."""

    FILE = STATS_FILE

    dataset: StatsDataset
    units: Units
    options: StatsSettings
    domains: dict[str, DomainStats]  # "all" first, then each domain
    growth: dict[str, list[GrowthPoint]]
    reuse: dict[str, dict[str, Reuse] | ReuseFailed]  # salt mode → domain → reuse
    reuse_exact_within: ExactReuse
    lru: Lru | None  # None: no salt mode could be replayed
