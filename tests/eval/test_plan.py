"""The plan of a run read from the shard rows (eval.plan): the same instances, repeats and turns
replay's FIFO issues, and a dataset size the manifest's `counts` cannot change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tamper import edit_manifest

import traces
from eval import shard_plan
from replay.loop.scheduler import instance_prompts
from replay.run import instance_turns, planned_turns


@pytest.mark.parametrize("num", [1, 3, 4, 5, 8, 11])
def test_the_plan_is_replays_own(sample_shards: Path, num: int) -> None:
    shards = traces.Shards(sample_shards)
    plan = shard_plan(shards)
    assert plan.planned_turns(num) == planned_turns(instance_turns(shards), num)
    m = len(shards)
    expected = []
    for k in range(num):
        inst = shards.instance(k % m)
        repeat, logical, _ = instance_prompts(shards, inst, k // m)
        expected.append((logical, repeat, tuple(row.turn for row in inst.turns)))
    assert [(p.instance_id, p.repeat, p.turns) for p in plan.planned(num)] == expected


def test_the_dataset_size_is_counted_in_the_rows(sample_shards: Path, tmp_path: Path) -> None:
    shards = Path(shutil.copytree(sample_shards, tmp_path / "shards"))
    edit_manifest(shards, lambda m: m["counts"].update(trajectories=1, instances=1, client_turns=2))
    plan = shard_plan(traces.Shards(shards))
    assert (plan.trajectories, len(plan.instances), plan.client_turns) == (4, 4, 17)
