"""Prefix caching, docs/history-marker.md's history marker and session affinity, measured over loopback."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
from sim_http import complete

from replay.sim import parse_metrics
from traces import BuildOptions, Shards, build_shards, iter_prompts, logical_id, request_body, salt_for
from traces.profiles.registry import get_profile

ZERO = {"step_base_ms": 0.0, "prefill_ms_per_token": 0.0, "batch_ms_per_seq": 0.0}
BLOCK = 16


@pytest.fixture(scope="module")
def shards_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "shards"
    build_shards([str(Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl")], out, BuildOptions())
    return out


def replay_instance(
    url: str, shards: Shards, trajectory: str, *, repeat: int = 1, marker: bool = True
) -> list[dict[str, Any]]:
    """Send every turn of one trajectory instance in order; returns each response's usage and replica."""
    inst = shards.find(trajectory)
    profile = get_profile("kimi-k3")
    out = []
    with httpx.Client(timeout=30) as client:
        for p in iter_prompts(inst, salt=salt_for(shards, trajectory, repeat), markers=marker):
            body = request_body(p.messages, p.tools, profile, max_completion_tokens=200)
            r = client.post(
                url + "/v1/chat/completions",
                json={**body, "stream": False},
                headers={"X-Session-ID": logical_id(trajectory, repeat)},
            )
            r.raise_for_status()
            out.append({**r.json()["usage"], "replica": int(r.headers["X-Sim-Replica"])})
    return out


def cached(u: dict[str, Any]) -> int:
    return int(u["prompt_tokens_details"]["cached_tokens"])


def test_cache_hits_rise_within_a_trajectory(start_sim, shards_dir: Path) -> None:
    url = start_sim(fresh=True, **ZERO).base_url
    turns = replay_instance(url, Shards(shards_dir), "acme__widgets-101")
    assert len(turns) >= 3 and cached(turns[0]) == 0
    for prev, cur in pairwise(turns):
        full = prev["prompt_tokens"] // BLOCK * BLOCK
        # the whole previous prompt hits; the marked assistant message (at most its first block) does not
        assert full <= cached(cur) <= full + BLOCK < cur["prompt_tokens"]
    assert [cached(t) for t in turns] == sorted(cached(t) for t in turns)


def test_history_marker_stops_reuse_of_generated_tokens(start_sim, shards_dir: Path) -> None:
    url = start_sim(fresh=True, answers="oracle", shards=str(shards_dir), **ZERO).base_url
    shards = Shards(shards_dir)
    with_marker = replay_instance(url, shards, "acme__widgets-101", repeat=1, marker=True)
    without = replay_instance(url, shards, "acme__widgets-101", repeat=2, marker=False)  # another salt: no cross-talk
    assert cached(with_marker[0]) == cached(without[0]) == 0
    for prev, cur in pairwise(with_marker):
        assert cached(cur) <= prev["prompt_tokens"] + BLOCK
    for prev, cur in pairwise(without):
        # the oracle generated exactly the recording, so its own tokens are reused too
        assert cached(cur) >= prev["prompt_tokens"] + prev["completion_tokens"] - 2 * BLOCK
    gain = sum(map(cached, without)) - sum(map(cached, with_marker))
    assert gain >= 0.9 * sum(t["completion_tokens"] for t in without[:-1])


def test_oracle_answers_the_recording_and_refuses_unknown_prompts(start_sim, shards_dir: Path) -> None:
    url = start_sim(answers="oracle", shards=str(shards_dir), **ZERO).base_url
    shards = Shards(shards_dir)
    inst = shards.find("sim_001")
    prompt = next(iter_prompts(inst, salt=salt_for(shards, "sim_001", 3)))
    with httpx.Client(timeout=30) as client:
        msg = complete(client, url, {"messages": prompt.messages, "tools": prompt.tools})["choices"][0]["message"]
        expected = prompt.row.expected
        assert expected is not None
        assert msg["content"] == expected.get("content") and msg.get("reasoning_content") == expected.get(
            "reasoning_content"
        )
        r = client.post(url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "not recorded"}]})
    assert r.status_code == 404 and "not in the shards" in r.json()["error"]["message"]


def per_replica(url: str, series: str) -> dict[str, float]:
    return parse_metrics(httpx.get(url + "/metrics").text)[series]


@pytest.mark.parametrize("router", ["affinity", "round-robin"])
def test_affinity_keeps_sessions_on_one_replica(start_sim, shards_dir: Path, router: str) -> None:
    url = start_sim(fresh=True, replicas=4, router=router, **ZERO).base_url
    shards = Shards(shards_dir)
    runs = {
        tid: replay_instance(url, shards, tid) for tid in ("acme__widgets-101", "acme__parser-7", "sim_001", "sim_002")
    }
    placed = {tid: {t["replica"] for t in turns} for tid, turns in runs.items()}
    hits = per_replica(url, "prompt_tokens_cached_total")
    prompt = sum(per_replica(url, "prompt_tokens_total").values())
    assert set(hits) == {"0", "1", "2", "3"}
    if router == "affinity":
        assert all(len(s) == 1 for s in placed.values())
        assert sum(hits.values()) / prompt > 0.5
    else:
        assert all(len(s) > 1 for s in placed.values())
        assert sum(hits.values()) / prompt < 0.2  # round-robin mostly lands where the history is not
