"""With unlimited cache capacity the simulator's measured cached-token fraction equals the ideal
within-trajectory reuse of traces.analysis.reuse (within 1 %), on coding trajectories (the synthetic coding set: long, fast-growing prompts)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from reuse_oracle import ideal_within_reuse

from traces import BuildOptions, Shards, build_shards, get_profile, iter_prompts, request_body

ZERO = {"step_base_ms": 0.0, "prefill_ms_per_token": 0.0, "batch_ms_per_seq": 0.0}


async def measured_fraction(url: str, shards: Shards) -> float:
    """Replay every instance (one in flight per instance, like replay's slots); cached / prompt tokens."""
    profile = get_profile("kimi-k3")
    async with httpx.AsyncClient(timeout=120) as client:

        async def one(inst) -> tuple[int, int]:
            prompt = hit = 0
            for p in iter_prompts(inst):
                body = {**request_body(p.messages, p.tools, profile, max_completion_tokens=4), "stream": False}
                r = await client.post(
                    url + "/v1/chat/completions", json=body, headers={"X-Session-ID": inst.instance_id}
                )
                r.raise_for_status()
                usage = r.json()["usage"]
                prompt += usage["prompt_tokens"]
                hit += usage["prompt_tokens_details"]["cached_tokens"]
            return prompt, hit

        totals = await asyncio.gather(*(one(inst) for inst in shards))
    return sum(h for _, h in totals) / sum(p for p, _ in totals)


def check(start_sim, source: Path, out: Path) -> None:
    build_shards([str(source)], out, BuildOptions())
    shards = Shards(out)
    ideal = ideal_within_reuse(shards, lambda text: -(-len(text) // 4)).fraction  # the sim's ~4 chars/token
    url = start_sim(fresh=True, cache_tokens=None, **ZERO).base_url
    measured = asyncio.run(measured_fraction(url, shards))
    assert ideal > 0.5
    assert abs(measured - ideal) / ideal < 0.01, (measured, ideal)


@pytest.mark.slow
def test_cached_fraction_equals_ideal_reuse_on_two_coding_trajectories(
    start_sim, coding_set: Path, tmp_path: Path
) -> None:
    lines = coding_set.read_text("utf-8").splitlines()
    keep: list[str] = []
    for line in lines:
        cid = json.loads(line).get("conversation_id")
        if cid not in keep:
            if len(keep) == 2:
                break
            keep.append(cid)
    src = tmp_path / "two.jsonl"
    src.write_text("\n".join(x for x in lines if json.loads(x).get("conversation_id") in keep) + "\n", "utf-8")
    check(start_sim, src, tmp_path / "shards")


@pytest.mark.slow
def test_cached_fraction_equals_ideal_reuse_on_the_coding_set(start_sim, coding_set: Path, tmp_path: Path) -> None:
    check(start_sim, coding_set, tmp_path / "shards")
