"""Run folders without a replay: `run_info`, a run.json with every field filled with a plausible
value and `over` applied on top (the file is typed, so a partial one is refused); `point_record`,
the records of the report tests' points; `gates`, their accuracy verdicts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from records import MS, record

from replay import Gates, Record, ResponseLimits, RunInfo
from replay.results.runinfo import DatasetRef, Preflight, ShardCheck


def run_info(*, content_hash: str = "abc123", **over: Any) -> RunInfo:
    info = RunInfo(
        trajbench_version="0.0",
        started_at="2026-01-01T00:00:00+00:00",
        started_monotonic_ns=123,
        shards="shards",
        dataset=DatasetRef("test", content_hash, 3, 3, 12),
        shard_verification=ShardCheck(False),
        salt="mlperf",
        salt_seed=0,
        history_marker=True,
        profile="kimi-k3",
        request_params={},
        model="m",
        endpoint="http://127.0.0.1:1",
        target="simulated",
        target_evidence="test",
        preflight=Preflight(False, None),
        api_key_given=False,
        concurrency=1,
        num_trajectories=3,
        planned_turns=12,
        inject_delays=True,
        stop_at_window_end=False,
        stop_issuing_on_first_user_complete=False,
        turn_timeout=600.0,
        drain_timeout=10.0,
        headers=["X-Session-ID"],
        workers=1,
        tokenizer=None,
        limits=ResponseLimits(),
    )
    return replace(info, **over)


def point_record(k: int, send: int, e2e_ms: int, tokens: int) -> Record:
    """Turn `k` of a report test's run (three trajectories in turn): sent at `send` ns, its first
    chunk 5 ms later, then one chunk a millisecond, `tokens` of them, one character each (TPOT
    counts the tokens after the first chunk), over `e2e_ms`."""
    return record(
        instance_id=f"t{k % 3}",
        trajectory_id=f"t{k % 3}",
        turn=2 * k + 1,
        client_turn_index=k,
        t_send_ns=send,
        t_first_ns=send + 5 * MS,
        t_last_ns=send + e2e_ms * MS,
        chunk_ns=tuple(send + 5 * MS + j * MS for j in range(tokens)),
        content="x" * tokens,
        completion_tokens=tokens,
        cached_tokens=50,
        first_chunk_chars=1,
    )


def gates(run_dir: Path) -> Gates:
    """The accuracy verdicts a report draws (eval's files in a real sweep): c0004 fails inline."""
    inline_pass = run_dir.name != "c0004"
    return Gates(inline_score=0.9 if inline_pass else 0.1, inline_pass=inline_pass, osl_mean=40.0, osl_pass=True)
