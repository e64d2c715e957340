"""`--max-completion-tokens`: the override reaches every request body and run.json (so the
compliance check can flag it); without it the profile's cap is sent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from loopback_server import LoopbackServer

import traces
from replay import ReplayError
from replay.config import RunConfig
from replay.results.runinfo import read_run_info
from replay.run import run_replay

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "data" / "sample.jsonl"


@pytest.mark.parametrize("cap", [None, 7])
def test_the_cap_is_sent_and_recorded(tmp_path: Path, cap: int | None) -> None:
    shards = tmp_path / "shards"
    traces.build_shards([str(SAMPLE)], shards, traces.BuildOptions(name="sample"))
    with LoopbackServer() as srv:
        run_dir = asyncio.run(
            run_replay(
                RunConfig(
                    shards=str(shards),
                    endpoint=srv.base_url,
                    out=str(tmp_path / "run"),
                    num_trajectories=2,
                    inject_delays=False,
                    progress="none",
                    max_completion_tokens=cap,
                )
            )
        )
    want = cap if cap is not None else traces.get_profile("kimi-k3").max_new_tokens
    assert srv.books.requests and {s.body["max_completion_tokens"] for s in srv.books.requests} == {want}
    assert read_run_info(run_dir).request_params["max_completion_tokens"] == want


def test_a_cap_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="--max-completion-tokens must be >= 1"):
        RunConfig(shards=str(tmp_path), max_completion_tokens=0).check()
