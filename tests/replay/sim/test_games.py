"""The simulator's engine routes an audit needs (GET /version, POST /reset_prefix_cache) and its
`--game` modes, each doing what it claims over loopback (docs/audits.md; the audits catching
them are tested in tests/eval/test_audits.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from sim_http import chat, complete

from replay.sim import SimConfigError, config_from_args, describe, parse_metrics
from replay.sim.games import PIECE, TextCache
from traces import BuildOptions, Shards, build_shards, iter_prompts, logical_id, request_body, salt_for
from traces.profiles.registry import get_profile

ZERO = {"step_base_ms": 0.0, "prefill_ms_per_token": 0.0, "batch_ms_per_seq": 0.0}
BLOCK = 16


@pytest.fixture(scope="module")
def shards_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("games") / "shards"
    build_shards([str(Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl")], out, BuildOptions())
    return out


def cached(body: dict[str, Any]) -> int:
    return int(body["usage"]["prompt_tokens_details"]["cached_tokens"])


def test_reset_prefix_cache_empties_the_cache_as_vllm_answers_it(start_sim) -> None:
    url = start_sim(fresh=True, **ZERO).base_url
    body = chat(text="the same long prompt " * 40)
    with httpx.Client(timeout=30) as client:
        assert cached(complete(client, url, body)) == 0
        again = cached(complete(client, url, body))
        assert again > 0  # the prompt is in the cache now
        r = client.post(url + "/reset_prefix_cache")
        assert (r.status_code, r.content) == (200, b"")  # vLLM's answer: 200 without a body
        metrics = parse_metrics(client.get(url + "/metrics").text)
        assert metrics["prefix_cache_resets_total"] == {"0": 1.0}
        assert metrics["prefix_cache_resident_tokens"] == {"0": 0.0}
        assert metrics["prompt_tokens_cached_total"]["0"] == again  # counters keep counting across a reset
        assert cached(complete(client, url, body)) == 0  # cold again
        version = client.get(url + "/version")
    assert version.status_code == 200 and version.json()["engine"] == "trajbench-sim"


def test_a_text_cache_matches_past_ignored_characters_and_maps_back() -> None:
    cache = TextCache(re.compile(r"\s+"))
    cached_text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    cache.insert(cached_text)
    marked = "alpha  beta gamma delta epsilon zeta eta theta iota kappa lambda mu"  # one space doubled
    upto = cache.match(marked)
    kept = re.sub(r"\s+", "", cached_text)
    whole = len(kept) // PIECE * PIECE
    assert re.sub(r"\s+", "", marked[:upto]) == kept[:whole]  # as far as the whole cached pieces go
    assert cache.match("omega " + cached_text) == 0
    cache.clear()
    assert cache.match(cached_text) == 0


def replay_instance(url: str, shards: Shards, trajectory: str, repeat: int = 1) -> list[dict[str, Any]]:
    inst = shards.find(trajectory)
    profile = get_profile("kimi-k3")
    out = []
    with httpx.Client(timeout=30) as client:
        for p in iter_prompts(inst, salt=salt_for(shards, trajectory, repeat)):
            body = request_body(p.messages, p.tools, profile, max_completion_tokens=400)
            out.append(complete(client, url, body, {"X-Session-ID": logical_id(trajectory, repeat)})["usage"])
    return out


@pytest.mark.slow
def test_generated_reuse_matches_the_marked_answer_the_honest_cache_does_not(start_sim, shards_dir: Path) -> None:
    shards = Shards(shards_dir)
    honest = replay_instance(
        start_sim(fresh=True, answers="oracle", shards=str(shards_dir), **ZERO).base_url, shards, "acme__widgets-101"
    )
    gamed = replay_instance(
        start_sim(fresh=True, answers="oracle", shards=str(shards_dir), game="generated-reuse", **ZERO).base_url,
        shards,
        "acme__widgets-101",
    )
    for prev, h, g in zip(honest, honest[1:], gamed[1:], strict=False):
        assert h["prompt_tokens_details"]["cached_tokens"] <= prev["prompt_tokens"] + BLOCK  # the marker stops it
        # the game reuses its own answer past the marker: most of it
        assert (
            g["prompt_tokens_details"]["cached_tokens"] >= prev["prompt_tokens"] + prev["completion_tokens"] - 3 * BLOCK
        )


def test_cross_session_reuses_another_repeats_prompts(start_sim, shards_dir: Path) -> None:
    shards = Shards(shards_dir)
    url = start_sim(fresh=True, game="cross-session", **ZERO).base_url
    first = replay_instance(url, shards, "acme__widgets-101", repeat=1)
    second = replay_instance(url, shards, "acme__widgets-101", repeat=2)  # other salts: nothing honest to share
    assert first[0]["prompt_tokens_details"]["cached_tokens"] == 0
    assert second[0]["prompt_tokens_details"]["cached_tokens"] >= second[0]["prompt_tokens"] - 3 * BLOCK


def test_response_cache_serves_a_seen_prompt_whole_and_survives_a_reset(start_sim) -> None:
    url = start_sim(fresh=True, game="response-cache", **ZERO).base_url
    body = chat(text="asked twice " * 30)
    with httpx.Client(timeout=30) as client:
        first = complete(client, url, body)
        client.post(url + "/reset_prefix_cache").raise_for_status()
        second = complete(client, url, body)
    prompt = second["usage"]["prompt_tokens"]
    assert cached(first) == 0 and cached(second) == (prompt - 1) // BLOCK * BLOCK
    assert second["choices"][0]["message"] == first["choices"][0]["message"]


def test_truncate_ends_every_answer_at_its_first_token(start_sim) -> None:
    url = start_sim(fresh=True, game="truncate", **ZERO).base_url
    with httpx.Client(timeout=30) as client:
        answer = complete(client, url, chat(max_tokens=64))
    assert answer["usage"]["completion_tokens"] == 1 and answer["choices"][0]["finish_reason"] == "length"


def test_the_game_is_an_option_and_the_one_line_says_so() -> None:
    config = config_from_args(["--game", "truncate"])
    assert config.game == "truncate" and "GAMING the audits (truncate)" in describe(config)
    with pytest.raises(SimConfigError, match="invalid choice: 'cheat'"):
        config_from_args(["--game", "cheat"])
