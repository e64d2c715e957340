"""The scheduler's logic against an injected client (no timing measured here): FIFO order,
repeats and re-salting, logical ids, session headers, abort on failure; and the coordinator's
window rule as plain state."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from records import record

import traces
from replay.client.stream import StreamResult
from replay.loop.backend import LocalSource
from replay.loop.coordinator import Coordinator
from replay.loop.scheduler import Scheduler, WorkerPlan, resolve
from replay.results.records import Record
from traces.shards.show import turn_body

IDS = ["acme__widgets-101", "acme__parser-7", "sim_001", "sim_002"]


class FakeClient:
    """Answers at once; `fail(body, headers)` → True makes that turn an HTTP 500."""

    def __init__(self, fail=None) -> None:
        self.sent: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.fail = fail or (lambda body, headers: False)

    async def stream_chat(self, encoded: bytes, headers: dict[str, str], *, timeout_s: float) -> StreamResult:
        body = orjson.loads(encoded)
        self.sent.append((body, headers))
        await asyncio.sleep(0)
        t = time.monotonic_ns()
        if self.fail(body, headers):
            return StreamResult(t, None, t + 10, (), "", "", (), None, None, 500, "http", "HTTP 500: boom")
        usage = {"prompt_tokens": 50, "completion_tokens": 2}
        return StreamResult(t, t + 5, t + 10, (t + 5, t + 10), "ok", "", (), "stop", usage, 200, None, None)


@pytest.fixture(scope="module")
def shards_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shards") / "sample"
    traces.build_shards(
        [str(Path(traces.__file__).parent / "data" / "sample.jsonl")], out, traces.BuildOptions(name="sample")
    )
    return out


def replay(
    shards_dir: Path,
    num: int,
    *,
    concurrency: int = 1,
    client: FakeClient | None = None,
    headers: tuple[str, ...] = ("X-Session-ID",),
) -> tuple[list[Record], FakeClient, Coordinator]:
    client = client or FakeClient()
    records: list[Record] = []
    coord = Coordinator(num, stop_at_window_end=False)
    plan = WorkerPlan(
        worker=0,
        slots=tuple(range(concurrency)),
        shards=str(shards_dir),
        profile="kimi-k3",
        base_url="http://unused",
        inject_delays=False,
        headers=headers,
    )
    asyncio.run(Scheduler(plan, LocalSource(coord, records.append), client).run())
    return records, client, coord


def test_resolve_maps_ordinals_to_instances_and_cycles() -> None:
    assert [(r.shard_index, r.cycle) for r in (resolve(i, 4) for i in range(9))] == [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (0, 2),
    ]


def test_fifo_runs_instances_in_file_order_with_repeats_and_logical_ids(shards_dir: Path) -> None:
    records, _, _ = replay(shards_dir, 9)
    order = list(dict.fromkeys(r.instance_id for r in records))
    assert order == IDS + [f"{i}__repeat_2" for i in IDS] + ["acme__widgets-101__repeat_3"]
    assert {r.instance_id: r.repeat for r in records}["sim_002__repeat_2"] == 2
    assert all(r.ok and r.delay_s == 0.0 for r in records)
    # one pass of the sample is 17 client turns; 9 instances = 2 passes + widgets (5 turns)
    assert len(records) == 17 * 2 + 5


def test_later_cycles_are_resalted_exactly_as_a_built_repeat(shards_dir: Path, tmp_path: Path) -> None:
    records, client, _ = replay(shards_dir, 8)
    built2 = tmp_path / "rep2"
    traces.build_shards(
        [str(Path(traces.__file__).parent / "data" / "sample.jsonl")],
        built2,
        traces.BuildOptions(name="rep2", repeats=2),
    )
    profile = traces.get_profile("kimi-k3")
    for rec, (body, _) in zip(records, client.sent, strict=True):
        assert body == turn_body(str(built2), rec.trajectory_id, rec.repeat, rec.turn, profile)
    rep2 = [r for r in records if r.repeat == 2]
    assert rep2 and {r.salt_repeat for r in rep2} == {"ba75"}  # docs/salting.md test vector of "2"
    assert {r.salt_repeat for r in records if r.repeat == 1} == {"4461"}
    widgets = {r.repeat: r.salt_conversation for r in records if r.trajectory_id == "acme__widgets-101"}
    assert widgets[1] == widgets[2]  # C is the source id's salt, identical across repeats
    stored = {
        (t.trajectory_id, t.turn): t.prompt_sha256
        for inst in traces.Shards(built2)
        for t in inst.turns
        if t.repeat == 2
    }
    assert all(r.prompt_sha256 == stored[(r.trajectory_id, r.turn)] for r in rep2)


def test_cycles_of_multi_repeat_shards_continue_the_repeat_numbers(shards_dir: Path, tmp_path: Path) -> None:
    built2 = tmp_path / "rep2"
    traces.build_shards(
        [str(Path(traces.__file__).parent / "data" / "sample.jsonl")],
        built2,
        traces.BuildOptions(name="rep2", repeats=2),
    )
    records, _, _ = replay(built2, 16)
    assert [r.repeat for r in records if r.trajectory_id == "sim_002" and r.turn == 1] == [1, 2, 3, 4]


def test_every_request_carries_the_logical_id_in_each_session_header(shards_dir: Path) -> None:
    records, client, _ = replay(shards_dir, 6, concurrency=2, headers=("X-Session-ID", "X-SMG-Routing-Key"))
    by_prompt = {r.prompt_sha256: r.instance_id for r in records}
    for body, headers in client.sent:
        logical = by_prompt[traces.messages_sha256(body["messages"])]
        assert headers == {"X-Session-ID": logical, "X-SMG-Routing-Key": logical}
    _, client, _ = replay(shards_dir, 2, headers=())
    assert all(h == {} for _, h in client.sent)


def test_a_failed_turn_aborts_the_rest_of_its_instance_only(shards_dir: Path) -> None:
    def fail(body: dict[str, Any], headers: dict[str, str]) -> bool:
        return headers["X-Session-ID"] == "acme__parser-7" and len(body["messages"]) == 4  # its turn 3

    records, client, _ = replay(shards_dir, 4, client=FakeClient(fail))
    parser = [(r.turn, r.error_kind) for r in records if r.instance_id == "acme__parser-7"]
    assert parser == [(1, None), (3, "http"), (5, "aborted"), (7, "aborted"), (9, "aborted")]
    sent_parser = [h for _, h in client.sent if h["X-Session-ID"] == "acme__parser-7"]
    assert len(sent_parser) == 2  # aborted turns are never sent
    assert [r.instance_id for r in records][-7:] == ["sim_001"] * 4 + ["sim_002"] * 3  # the slot moved on
    failed = next(r for r in records if r.error_kind == "http")
    assert failed.http_status == 500 and "boom" in (failed.error_message or "")


def test_records_carry_usage_and_fingerprint(shards_dir: Path) -> None:
    records, client, _ = replay(shards_dir, 1)
    r = records[0]
    assert (r.prompt_tokens, r.completion_tokens, r.output_tokens(), r.worker, r.slot) == (50, 2, 2, 0, 0)
    assert r.prompt_sha256 == traces.messages_sha256(client.sent[0][0]["messages"])
    assert r.client_turn_index == 0 and r.turn == 1 and r.in_window


class LengthCounter:
    def output_tokens(self, message: dict[str, Any], **_: Any) -> int:
        return len(message["content"] or "") + len(message.get("reasoning_content") or "")


def test_client_side_output_tokens_come_from_the_given_tokenizer(shards_dir: Path) -> None:
    records: list[Record] = []
    plan = WorkerPlan(
        worker=0, slots=(0,), shards=str(shards_dir), profile="kimi-k3", base_url="http://unused", inject_delays=False
    )
    asyncio.run(
        Scheduler(
            plan,
            LocalSource(Coordinator(1, stop_at_window_end=False), records.append),
            FakeClient(),
            counter=LengthCounter(),
        ).run()
    )
    assert {(r.client_output_tokens, r.completion_tokens) for r in records} == {(2, 2)}  # "ok" = 2 characters


class BrokenClient(FakeClient):
    async def stream_chat(self, body: bytes, headers: dict[str, str], *, timeout_s: float) -> StreamResult:
        if len(self.sent) >= 3:
            raise RuntimeError("client bug")
        return await super().stream_chat(body, headers, timeout_s=timeout_s)


def test_a_slot_that_raises_stops_the_worker_and_the_run_keeps_its_results(shards_dir: Path, tmp_path: Path) -> None:
    from replay.config import RunConfig
    from replay.run import run_replay

    client = BrokenClient()
    cfg = RunConfig(
        shards=str(shards_dir), endpoint="http://unused", concurrency=2, inject_delays=False, out=str(tmp_path / "run")
    )
    with pytest.raises(RuntimeError, match="client bug"):
        asyncio.run(run_replay(cfg, client_factory=lambda plan: _Opened(client)))
    summary = json.loads((tmp_path / "run" / "performance" / "result_summary.json").read_text())
    assert (
        summary["trajbench"]["crashed"] is True
        and summary["state"] == "interrupted"
        and summary["trajbench"]["turns"]["ok"] == 3
    )


class _Opened:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    async def __aenter__(self) -> FakeClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        pass


# ---- the coordinator: FIFO and window as plain state
def fake_clock(values: list[int]):
    it = iter(values)
    return lambda: next(it)


def test_coordinator_hands_out_ordinals_then_closes_on_a_finished_slot() -> None:
    c = Coordinator(3, stop_at_window_end=False, clock=fake_clock([500]))
    assert [c.next_instance(False) for _ in range(3)] == [0, 1, 2]
    idle = c.next_instance(False), c.window_close_ns  # an idle slot from the start
    assert idle == (None, None)
    assert c.next_instance(True) is None and c.window_close_ns == 500
    assert not c.stopped
    assert c.in_window(499) and not c.in_window(500)


def test_the_window_closes_when_the_slot_finished_not_when_its_request_is_read() -> None:
    # another process's slot finished at 420; the coordinator reads its request at 500
    c = Coordinator(1, stop_at_window_end=False, clock=fake_clock([500, 500]))
    assert c.next_instance(False, 100) == 0
    assert c.next_instance(True, 420) is None and c.window_close_ns == 420
    assert c.in_window(419) and not c.in_window(450)  # sent meanwhile by another worker: out
    # a time ahead of the coordinator's clock (a mis-estimated offset) is never a close in the future
    late = Coordinator(0, stop_at_window_end=False, clock=fake_clock([500]))
    assert late.next_instance(True, 900) is None and late.window_close_ns == 500


def test_coordinator_stops_issuing_at_window_end_when_asked() -> None:
    c = Coordinator(1, stop_at_window_end=True, clock=fake_clock([7]))
    assert c.next_instance(False) == 0
    assert c.next_instance(True) is None
    assert c.stopped and c.next_instance(True) is None


def test_coordinator_stamps_records_by_send_time() -> None:
    c = Coordinator(0, stop_at_window_end=False, clock=fake_clock([1000]))
    assert c.next_instance(True) is None
    assert c.stamp(_sent(999)).in_window  # issued before the close, finished after
    assert not c.stamp(_sent(1000)).in_window


def test_a_send_already_stamped_in_the_window_stays_before_the_close() -> None:
    # another worker's turn sent at 450 arrives (stamped in the window) before the request of the
    # slot that finished at 420: the close moves just past it, so no send is judged both ways
    c = Coordinator(0, stop_at_window_end=False, clock=fake_clock([500]))
    assert c.stamp(_sent(450)).in_window
    assert c.stamp(_sent(480, error_kind="aborted")).in_window  # never sent
    assert c.next_instance(True, 420) is None and c.window_close_ns == 451
    assert c.stamp(_sent(450)).in_window and not c.in_window(451)
    # a mapped send ahead of the coordinator's clock (a clock offset off) stays judged in
    ahead = Coordinator(0, stop_at_window_end=False, clock=fake_clock([500]))
    assert ahead.stamp(_sent(600)).in_window
    assert ahead.next_instance(True, 420) is None and ahead.window_close_ns == 601


def _sent(t_send_ns: int, **fields: Any) -> Record:
    """A turn sent at `t_send_ns` that ended at 2000 ns, as a worker hands it to the coordinator."""
    return record(t_send_ns=t_send_ns, t_first_ns=None, t_last_ns=2000, chunk_ns=(), **fields)


class GatedCounter(LengthCounter):
    """A tokenizer whose every count waits until the coordinator's window has closed, that is until
    the slot has read the last byte of its last turn: were a count on a turn's critical path, that
    would never happen, and the gate gives up (after 60 s) and says so."""

    def __init__(self, coord: Coordinator) -> None:
        self.coord = coord
        self.calls = 0
        self.gave_up = False

    def output_tokens(self, message: dict[str, Any], **kw: Any) -> int:
        self.calls += 1
        deadline = time.monotonic() + 60
        while self.coord.window_close_ns is None and not self.gave_up:
            self.gave_up = time.monotonic() > deadline
            time.sleep(0.01)
        return super().output_tokens(message, **kw)


def test_client_token_counting_is_off_the_turns_critical_path(shards_dir: Path) -> None:
    """docs/closed-loop.md: with --tokenizer the slot moves on when the last byte is read; the
    window closes at that byte, not after the count; every record still carries its count, in
    turn order. Against a real loopback server (real sockets and timestamps)."""
    from loopback_server import LoopbackServer, Reply

    from replay.loop.backend import open_client

    records: list[Record] = []
    coord = Coordinator(1, stop_at_window_end=False)
    counter = GatedCounter(coord)
    with LoopbackServer(lambda b, h: Reply(chunks=2)) as srv:
        plan = WorkerPlan(
            worker=0, slots=(0,), shards=str(shards_dir), profile="kimi-k3", base_url=srv.base_url, inject_delays=False
        )

        async def main() -> None:
            async with open_client(plan) as client:
                await Scheduler(plan, LocalSource(coord, records.append), client, counter=counter).run()

        asyncio.run(main())
    # every turn went out, and the last answer's last byte was read, while every count waited
    assert not counter.gave_up
    assert len(records) >= 3 and all(r.ok for r in records)
    assert [r.turn for r in records] == sorted(r.turn for r in records)  # emitted in turn order
    assert all(r.client_output_tokens == len(r.content) for r in records)  # every count is there
    assert counter.calls == 2 * len(records)  # the whole answer and the part after its first chunk
    assert coord.window_close_ns == records[-1].t_last_ns  # the last byte closed the window


class _Interleaving(FakeClient):
    """Logs each request, and at each answer's end schedules a callback that stands for a read
    of another stream arriving meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    async def stream_chat(self, encoded: bytes, headers: dict[str, str], *, timeout_s: float) -> StreamResult:
        self.log.append("request")
        result = await super().stream_chat(encoded, headers, timeout_s=timeout_s)
        asyncio.get_running_loop().call_soon(self.log.append, "other read")
        return result


def test_a_turns_end_lets_other_reads_in_before_the_next_request(shards_dir: Path) -> None:
    """The work between two turns of a slot (record, next prompt, request) is not done at one go:
    a read that came meanwhile is taken (and stamped) before the slot writes its next request."""
    records, client, _ = replay(shards_dir, 1, client=_Interleaving())
    log = client.log  # type: ignore[attr-defined]
    assert len(records) > 2 and log.count("request") == len(records)
    assert log == ["request", "other read"] * len(records)


@pytest.mark.parametrize(("instances", "read"), [(2, 2), (None, 4)])
def test_the_first_wave_is_read_before_the_sockets_are_warmed_and_not_past_the_run(
    shards_dir: Path, instances: int | None, read: int
) -> None:
    """Read after warming, a first wave longer than the pool's max idle would find every warmed
    socket expired; and a run of fewer instances than slots reads no instance it never starts."""
    from replay.loop.backend import LocalBackend

    class Warming(FakeClient):
        async def prewarm(self, slots: int) -> None:
            assert backend._scheduler is not None
            self.read_when_warmed = len(backend._scheduler._ready)

    client = Warming()
    plan = WorkerPlan(
        worker=0,
        slots=tuple(range(6)),
        shards=str(shards_dir),
        profile="kimi-k3",
        base_url="http://unused",
        inject_delays=False,
        instances=instances,
    )
    records: list[Record] = []
    coord = Coordinator(instances or 6, stop_at_window_end=False)
    backend = LocalBackend(plan, coord, records.append, client_factory=lambda plan: _Opened(client))
    asyncio.run(backend.run())
    assert client.read_when_warmed == read  # the sample's 4 instances cycle: slots 4 and 5 reuse 0 and 1
    assert {r.instance_id for r in records} and all(r.ok for r in records)
