"""A run.json for tests that need a run folder but no replay: every field filled with a
plausible value, `over` applied on top (the file is typed, so a partial one is refused)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replay import ResponseLimits, RunInfo
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
