"""`traces.BodyEncoder`: each message encoded once, the bytes those of the whole body encoded."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import traces


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> traces.Shards:
    out = tmp_path_factory.mktemp("shards") / "sample"
    traces.build_shards(
        [str(Path(traces.__file__).parent / "data" / "sample.jsonl")], out, traces.BuildOptions(name="sample")
    )
    return traces.Shards(out)


@pytest.mark.parametrize(("model", "max_tokens"), [(None, None), ('odd "messages":[] name', 64)])
def test_every_turn_is_byte_for_byte_the_whole_body_encoded(
    shards: traces.Shards, model: str | None, max_tokens: int | None
) -> None:
    profile = traces.get_profile("qwen3.6-35b-a3b")
    turns = 0
    for k in range(len(shards)):
        encoder = traces.BodyEncoder(profile, model=model, max_completion_tokens=max_tokens)
        for p in traces.iter_prompts(shards.instance(k)):
            whole = traces.request_body(p.messages, p.tools, profile, model=model, max_completion_tokens=max_tokens)
            assert encoder.encode(p.messages, p.tools) == orjson.dumps(whole)
            turns += 1
    assert turns > len(shards)  # instances of several turns: the history was reused


def test_a_prompt_that_does_not_extend_the_last_one_is_encoded_afresh() -> None:
    profile = traces.get_profile("qwen3.6-35b-a3b")
    encoder = traces.BodyEncoder(profile)
    a, b = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    encoder.encode([a, b], None)
    other = [{"role": "user", "content": "x"}, b]  # same length, another first message
    assert encoder.encode(other, None) == orjson.dumps(traces.request_body(other, None, profile))
    tools = [{"type": "function", "function": {"name": "bash"}}]
    assert encoder.encode([a], tools) == orjson.dumps(traces.request_body([a], tools, profile))  # shorter, tools
