"""The Ray driver's bookkeeping without a cluster (docs/ray.md): what a lost worker's unrecorded
turns become, and which clock estimate is kept. The driver's handlers are fed the messages an
actor would send; no Ray is needed (the cluster tests are in test_ray.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import traces
from replay.client.stream import StreamResult
from replay.loop.coordinator import Coordinator, NextInstance, TurnDone
from replay.loop.raybackend import ClockSample, RayBackend, WorkerClock
from replay.loop.scheduler import Scheduler, WorkerPlan, resolve
from replay.results.records import Record

WIDGETS_DELAYS = {1: 0.0, 3: 0.4, 5: 0.2, 7: 0.1, 9: 1.8}  # the sample's first instance, turn → delay


@pytest.fixture(scope="module")
def shards_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shards") / "sample"
    traces.build_shards(
        [str(Path(traces.__file__).parent / "data" / "sample.jsonl")], out, traces.BuildOptions(name="sample")
    )
    return out


def _driver(shards_dir: Path, *, delays: bool, num: int = 1) -> tuple[RayBackend, list[Record], WorkerPlan]:
    plan = WorkerPlan(
        worker=1, slots=(0,), shards=str(shards_dir), profile="kimi-k3", base_url="http://x", inject_delays=delays
    )
    sink: list[Record] = []
    backend = RayBackend([plan], Coordinator(num, stop_at_window_end=False), sink.append)
    backend._live = {1}  # as after the actors met
    return backend, sink, plan


def _answered(plan: WorkerPlan, ordinal: int, position: int, t_last_ns: int) -> Record:
    """The record a worker sends for the turn at `position` of the instance it runs as `ordinal`."""
    helper = Scheduler(plan, None, None)  # type: ignore[arg-type]
    ref = resolve(ordinal, len(helper.shards))
    run, prompts = helper._prepare(0, ref, helper.shards.instance(ref.shard_index))
    t = t_last_ns - 1000
    result = StreamResult(t, t + 10, t_last_ns, (t + 10,), "ok", "", (), "stop", None, 200, None, None)
    return helper._record(run, list(prompts)[position], 0.0, result=result)


def test_a_lost_workers_unrecorded_turns_are_worker_lost_not_unsent(shards_dir: Path) -> None:
    """Without delays any unrecorded turn may have been sent and answered, its record still in the
    dead actor's unsent batch: none of them may read "not sent"."""
    backend, sink, plan = _driver(shards_dir, delays=False)
    backend._handle(1, NextInstance(1, 0, False, 1, None))
    backend._handle(1, TurnDone(_answered(plan, 0, 0, time.monotonic_ns())))
    backend._lose(1, "killed")
    lost = [r for r in sink if r.error_kind is not None]
    assert [r.turn for r in sink] == [1, 3, 5, 7, 9]
    assert [r.error_kind for r in lost] == ["worker-lost"] * 4
    assert all("not sent" not in (r.error_message or "") for r in lost)
    assert "fate is unknown" in (lost[1].error_message or "")


def test_only_turns_the_recorded_delays_rule_out_are_aborted(shards_dir: Path) -> None:
    """With delays, turn 5 could not have been sent before 0.4 + 0.2 s after turn 1's answer: lost
    0.5 s after it, turn 3 is of unknown fate, turns 5 on provably never left the client."""
    backend, sink, plan = _driver(shards_dir, delays=True)
    backend._handle(1, NextInstance(1, 0, False, 1, None))
    backend._assigned[(1, 0)] -= 1_000_000_000  # handed out a second ago, answered 0.5 s ago
    backend._handle(1, TurnDone(_answered(plan, 0, 0, time.monotonic_ns() - 500_000_000)))
    backend._lose(1, "killed")
    assert [(r.turn, r.error_kind) for r in sink] == [
        (1, None),
        (3, "worker-lost"),
        (5, "aborted"),
        (7, "aborted"),
        (9, "aborted"),
    ]
    assert all((r.error_message or "").startswith("not sent") for r in sink if r.error_kind == "aborted")


def test_a_late_record_of_the_previous_instance_marks_nothing_of_the_next(shards_dir: Path) -> None:
    """A slot may ask for its next instance before its last record arrives (client-side counting
    defers records): that record must not count as a turn of the instance the slot runs now."""
    backend, sink, plan = _driver(shards_dir, delays=False, num=2)
    backend._handle(1, NextInstance(1, 0, False, 1, None))  # instance 0
    backend._handle(1, NextInstance(1, 0, True, 2, None))  # done with it: instance 1
    late = _answered(plan, 0, 1, time.monotonic_ns())  # instance 0's turn 3 arrives only now
    backend._handle(1, TurnDone(late))
    backend._lose(1, "killed")
    second = [r for r in sink if r.instance_id != late.instance_id]
    assert second and all(r.error_kind == "worker-lost" for r in second)
    assert 3 in {r.turn for r in second}  # its own turn 3 is lost, not taken as recorded


def test_the_tightest_clock_estimate_is_kept() -> None:
    clock = WorkerClock()
    clock.check([ClockSample(100, 40), ClockSample(90, 10)])
    clock.check([ClockSample(400, 300)])  # a re-check over a busy link
    assert clock.current == ClockSample(90, 10) and len(clock.checks) == 2
    clock.check([ClockSample(95, 10)])  # as tight: the newer one
    assert clock.current == ClockSample(95, 10)
    assert clock.to_driver(1095) == 1000


def test_a_recheck_adds_an_estimate(monkeypatch: pytest.MonkeyPatch, shards_dir: Path) -> None:
    """The re-check loop measures every live worker each period (what run.json's clock_checks
    counts), here driven for two periods without a cluster."""
    import asyncio

    from replay.loop import raybackend

    monkeypatch.setattr(raybackend, "CLOCK_RECHECK_S", 0.0)
    backend, _, _ = _driver(shards_dir, delays=False)

    class Clock:
        @staticmethod
        async def remote() -> int:
            return time.monotonic_ns()

    backend._actors[1] = type("Actor", (), {"clock": Clock})()

    async def two_periods() -> None:
        task = asyncio.create_task(backend._recheck_clocks())
        while len(backend._clocks[1].checks) < 2:
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(asyncio.wait_for(two_periods(), 10))
    assert len(backend._clocks[1].checks) >= 2
