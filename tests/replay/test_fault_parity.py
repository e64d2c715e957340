"""Parity with the reference client on faults: what fails a turn, what only leaves it partial,
and what each side's keys then count. The reference's verdict per fault is restated here from its
behaviour (docs/closed-loop.md): it fails a turn only when no response it keeps started (a status
other than 200, a connection broken before the response head) or when its tool-call merge raises;
a stream that breaks, carries an error object or a malformed line or chunk, ends without [DONE]
or a finish reason, or carries nothing is a completed turn to it, and its trajectory goes on.

One run over a real loopback server: each trajectory (two client turns) gets one fault on its
first turn and a clean answer on its second; one slot, so every turn is in the window."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from loopback_server import write_traces
from raw_server import (
    DONE_EVENT,
    END,
    FINISH_EVENT,
    Exchange,
    RawServer,
    chunk,
    delta_event,
    full_stream,
    plain,
    sse_head,
)

import traces
from replay.config import RunConfig
from replay.results.records import read_records
from replay.run import run_replay

ERR = b'data: {"error":{"message":"KV cache full","code":503}}\n\n'
TOOL_OBJECT_ARGS = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function",'
    b'"function":{"name":"bash","arguments":{"command":"ls"}}}]},"finish_reason":null}]}\n\n'
)


def _stream(*events: bytes, end: bool = True) -> bytes:
    return sse_head() + b"".join(chunk(e) for e in events) + (END if end else b"")


def _written_then_closed(ex: Exchange, data: bytes) -> None:
    ex.write(data)
    ex.close()


#: fault → (what the server does on the trajectory's first turn, the reference's verdict, our kind)
FAULTS: dict[str, tuple[Callable[[Exchange], object], str, str]] = {
    "http": (lambda ex: ex.write(plain(500, b'{"error":{"message":"busy"}}')), "failed", "http"),
    "reset": (lambda ex: ex.reset(), "failed", "reset"),
    "toolargs": (lambda ex: ex.write(_stream(TOOL_OBJECT_ARGS, FINISH_EVENT, DONE_EVENT)), "failed", "tool_call"),
    "broken": (lambda ex: _written_then_closed(ex, _stream(delta_event("a"), end=False)), "completed", "stream"),
    "errobj": (lambda ex: ex.write(_stream(delta_event("a"), ERR, DONE_EVENT)), "completed", "error_object"),
    "badline": (
        lambda ex: ex.write(_stream(delta_event("a"), b"data: {oops\n\n", FINISH_EVENT, DONE_EVENT)),
        "completed",
        "malformed",
    ),
    "badshape": (
        lambda ex: ex.write(_stream(b'data: {"choices":{"delta":{"content":"x"}}}\n\n', delta_event("a"), DONE_EVENT)),
        "completed",
        "malformed",
    ),
    "nodone": (lambda ex: ex.write(_stream(delta_event("a"))), "completed", "unterminated"),
    "nothing": (lambda ex: ex.write(_stream(b'data: {"choices":[]}\n\n', DONE_EVENT)), "completed", "empty"),
}


def _script(ex: Exchange) -> Awaitable[None]:
    async def go() -> None:
        if not ex.request.line.startswith("POST"):  # the run's /metrics scrape: nothing here
            ex.write(plain(404, b"{}"))
            return
        session = ex.request.headers.get("x-session-id", "")
        first_turn = len(json.loads(ex.request.body)["messages"]) == 2  # system + the first user message
        if first_turn and session in FAULTS:
            FAULTS[session][0](ex)
        else:
            ex.write(full_stream("ok"))
        await asyncio.sleep(0)

    return go()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("faults")
    src = write_traces(tmp / "faults.jsonl", {name: [0.0, 0.0] for name in FAULTS})
    traces.build_shards([str(src)], tmp / "shards", traces.BuildOptions(name="faults"))

    async def go() -> Path:
        async with RawServer(_script) as srv:
            config = RunConfig(
                shards=str(tmp / "shards"),
                endpoint=srv.url,
                out=str(tmp / "run"),
                inject_delays=False,
                skip_preflight=True,
                progress="none",
                turn_timeout=20,
            )
            return await run_replay(config)

    return asyncio.run(go())


def test_each_fault_fails_or_completes_its_turn_as_the_reference_does(run_dir: Path) -> None:
    recs = {(r.instance_id, r.turn): r for r in read_records(run_dir)}
    for name, (_, verdict, kind) in FAULTS.items():
        first, second = recs[(name, 1)], recs[(name, 3)]
        assert first.error_kind == kind, name
        assert first.failed == (verdict == "failed") and first.partial == (verdict == "completed"), name
        # a failure aborts the rest of the trajectory; a partial turn lets it go on
        assert second.error_kind == ("aborted" if verdict == "failed" else None), name
    assert recs[("broken", 1)].content == "a" and recs[("errobj", 1)].content == "a"  # what arrived is kept


def test_both_sides_keys_count_the_faults_each_by_its_own_rule(run_dir: Path) -> None:
    s = json.loads((run_dir / "performance" / "result_summary.json").read_text())
    failed = sum(1 for _, verdict, _ in FAULTS.values() if verdict == "failed")
    n = 2 * len(FAULTS)
    # the reference: every turn issued and completed; failed = the failed turns and the turns they aborted
    assert (s["n_samples_issued"], s["n_samples_completed"], s["n_samples_failed"]) == (n, n, 2 * failed)
    turns = s["trajbench"]["turns"]
    assert turns["partial_by_kind"] == {"empty": 1, "error_object": 1, "malformed": 2, "stream": 1, "unterminated": 1}
    assert (turns["failed"], turns["aborted"], turns["partial"], turns["ok"]) == (failed, failed, 6, 6)
    assert turns["sent"] == turns["ok"] + turns["failed"] + turns["partial"] + turns["cancelled"]
    assert s["trajbench"]["latency"]["n"] == turns["ok"]  # trajbench's distributions: clean answers only
