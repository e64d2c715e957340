"""What a run of a shard folder had to issue, read from the shard rows themselves.

The manifest's `counts` sit outside the content hash (docs/files.md): an edited count would pass
a dataset check. So every count a check judges comes from the rows, which the content hash covers:
each stored instance's ids, repeat, client turn numbers and salts are read from its row group
(only those small columns), and the plan of a run (which logical instances, which turns) follows
from them exactly as replay's FIFO walks them (docs/closed-loop.md): stored instances in order,
cycling, each cycle past the first a new repeat.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

import traces

_COLUMNS = ["instance_id", "trajectory_id", "repeat", "turn", "salt_repeat", "salt_conversation"]


@dataclass(frozen=True)
class StoredInstance:
    """One stored trajectory instance, as its rows say."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turns: tuple[int, ...]  # client turn numbers, in order
    salt_repeat: str
    salt_conversation: str


@dataclass(frozen=True)
class PlannedInstance:
    """One logical instance a run starts, and the client turns it must issue."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turns: tuple[int, ...]


@dataclass(frozen=True)
class ShardPlan:
    """The stored instances of a shard folder, in FIFO order."""

    instances: tuple[StoredInstance, ...]

    @property
    def trajectories(self) -> int:
        """The dataset's size: distinct trajectories (source ids) in the rows."""
        return len({i.trajectory_id for i in self.instances})

    @property
    def client_turns(self) -> int:
        return sum(len(i.turns) for i in self.instances)

    def planned(self, num_instances: int) -> Iterator[PlannedInstance]:
        """The instances a run of `num_instances` starts, as replay's FIFO offers them (the same
        logical ids and repeats its scheduler gives each cycle, `replay.loop.instance_prompts`)."""
        m = len(self.instances)
        top = max((i.repeat for i in self.instances), default=1)
        for k in range(num_instances):
            stored = self.instances[k % m]
            cycle = k // m
            repeat = stored.repeat + cycle * top
            iid = stored.instance_id if cycle == 0 else traces.logical_id(stored.trajectory_id, repeat)
            yield PlannedInstance(iid, stored.trajectory_id, repeat, stored.turns)

    def planned_turns(self, num_instances: int) -> int:
        return sum(len(p.turns) for p in self.planned(num_instances))


def shard_plan(shards: traces.Shards) -> ShardPlan:
    """Read each stored instance's ids, repeat, turn numbers and salts from its row group;
    `ShardError` when a row group does not hold the instance the index places there."""
    files: dict[int, pq.ParquetFile] = {}
    out: list[StoredInstance] = []
    try:
        for e in shards.index:
            path = shards.path / shards.manifest.shards[e.shard].file  # checked inside the folder on open
            if e.shard not in files:
                files[e.shard] = pq.ParquetFile(path)
            rows = files[e.shard].read_row_group(e.group, columns=_COLUMNS).to_pydict()
            if not rows["instance_id"] or set(rows["instance_id"]) != {e.instance_id}:
                raise traces.ShardError(
                    f"{path}: row group {e.group} does not hold instance {e.instance_id}; the folder is corrupt, "
                    "rebuild it with `trajbench traces build`"
                )
            out.append(
                StoredInstance(
                    e.instance_id,
                    rows["trajectory_id"][0],
                    int(rows["repeat"][0]),
                    tuple(int(t) for t in rows["turn"]),
                    rows["salt_repeat"][0] or "",
                    rows["salt_conversation"][0] or "",
                )
            )
    except (pa.ArrowException, OSError, IndexError, KeyError) as exc:
        raise traces.ShardError(
            f"{shards.path}: the shard rows cannot be read ({exc}); rebuild the folder with `trajbench traces build`"
        ) from None
    finally:
        for f in files.values():
            f.close()
    return ShardPlan(tuple(out))
