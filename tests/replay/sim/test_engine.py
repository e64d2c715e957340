"""The step loop's scheduling, the prefix cache and token blocks, driven directly (no HTTP, no time)."""

from __future__ import annotations

import pytest

from replay.sim.answers import Answer, ToolCallPlan, plan
from replay.sim.cache import PrefixCache
from replay.sim.config import ROUTERS, SimConfig, SimConfigError, config_from_options, config_to_args
from replay.sim.engine import Replica
from replay.sim.router import ROUTERS as ROUTER_REGISTRY
from replay.sim.router import Router
from replay.sim.tokens import ApproxTokenizer, render_answer, render_message, render_prompt


def replica(**options: object) -> Replica:
    return Replica(0, SimConfig(**options))  # type: ignore[arg-type]


def test_chunked_prefill_then_one_decode_token_per_step() -> None:
    r = replica(token_budget=100, step_base_ms=2.0, prefill_ms_per_token=0.5, batch_ms_per_seq=1.0, cache_tokens=0)
    req = r.submit(250, (), n_out=3)
    durations, produced = [], []
    for _ in range(5):
        duration, touched = r._step()
        r._publish(touched)
        durations.append(duration)
        produced.append(req.produced)
    # 100 + 100 + 50 prefill, the first token with the last chunk, then one token per step
    assert produced == [0, 0, 1, 2, 3] and req.done
    assert durations[:3] == pytest.approx([(2 + 50 + 1) / 1000, (2 + 50 + 1) / 1000, (2 + 25 + 1) / 1000])
    assert durations[3] == pytest.approx((2 + 1) / 1000)
    assert not r.running and r.requests_finished == 1 and r.generation_tokens_total == 3


def test_decode_and_prefill_share_the_budget() -> None:
    r = replica(token_budget=10, cache_tokens=0)
    a = r.submit(5, (), n_out=100)
    r._publish(r._step()[1])  # a prefilled (5 tokens), decodes its first token
    b = r.submit(30, (), n_out=100)
    r._publish(r._step()[1])  # a decodes 1 token; b gets the 9 left
    assert (a.produced, b.prefill_left) == (2, 21)
    r._publish(r._step()[1])
    assert (a.produced, b.prefill_left) == (3, 12)


def test_max_num_seqs_makes_requests_wait() -> None:
    r = replica(max_num_seqs=2, cache_tokens=0)
    reqs = [r.submit(4, (), n_out=2) for _ in range(3)]
    r._publish(r._step()[1])
    assert [q.produced for q in reqs] == [1, 1, 0] and r.num_waiting == 1
    r._publish(r._step()[1])
    assert [q.done for q in reqs] == [True, True, False]
    r._publish(r._step()[1])
    assert reqs[2].produced == 1


def test_cancelled_requests_leave_the_batch() -> None:
    r = replica(cache_tokens=0)
    a, b = r.submit(4, (), n_out=50), r.submit(4, (), n_out=50)
    r._publish(r._step()[1])
    r.cancel(a)
    r._publish(r._step()[1])
    assert (a.produced, b.produced) == (1, 2) and r.num_running == 1


def test_admission_consults_the_prefix_cache() -> None:
    tok = ApproxTokenizer(4)
    r = replica(block_size=4, cache_tokens=None)
    first = tok.tokenize("a" * 100)
    r.submit(first.count, first.blocks, 1)
    r._publish(r._step()[1])
    second = tok.tokenize("a" * 100 + "b" * 60)
    req = r.submit(second.count, second.blocks, 1)
    r._publish(r._step()[1])
    assert req.cached_tokens == 24 and r.cached_tokens_total == 24 and r.prompt_tokens_total == 25 + 40


def test_prefix_cache_match_lru_and_capacity() -> None:
    c = PrefixCache(block_size=2, capacity_tokens=8)  # 4 blocks
    c.insert([b"a", b"b", b"c"])
    assert c.match([b"a", b"b", b"x"], prompt_tokens=7) == 4
    assert c.match([b"a", b"b", b"c"], prompt_tokens=6) == 4  # at least one token is computed
    c.insert([b"d", b"e"])  # over capacity: the least recent is the old prompt's tail
    assert c.match([b"a", b"b", b"c"], prompt_tokens=9) == 4 and c.evicted_blocks == 1
    assert PrefixCache(2, 0).match([b"a"], 5) == 0
    off = PrefixCache(2, 0)
    off.insert([b"a"])
    assert len(off) == 0


def test_tokens_are_prefix_stable_and_incremental() -> None:
    tok = ApproxTokenizer(16)
    text = "système" * 300
    short, long = tok.tokenize(text[:1000]), tok.tokenize(text)
    assert long.blocks[: len(short.blocks)] == short.blocks and len(short.blocks) == 1000 // 64
    assert tok.tokenize(text, prefix=short) == long
    assert long.count == -(-len(text) // 4) and "".join(tok.pieces(text)) == text


def test_rendering_appends_and_answers_render_like_history() -> None:
    tools = [{"type": "function", "function": {"name": "bash"}}]
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    msgs = [{"role": "system", "content": "[salt: 1] sys"}, {"role": "user", "content": "hi"}]
    first = render_prompt(msgs, tools)
    assert first.index("sys") < first.index("<|tools|>")  # the salt comes before the tool list
    answer = {"role": "assistant", "reasoning_content": "think", "tool_calls": [call]}
    nxt = render_prompt([*msgs, answer, {"role": "tool", "tool_call_id": "c1", "content": "out"}], tools)
    assert nxt.startswith(first + render_answer(None, "think", [call]))
    marked = render_message({**answer, "reasoning_content": " think"})
    assert not nxt.startswith(first + marked[len("<|assistant|>\n") :])


def test_plan_caps_length_and_rebuilds_tool_calls() -> None:
    answer = Answer(reasoning=("ab", "cd"), tool_calls=(ToolCallPlan("c1", "bash", ('{"co', "mmand", '": 1}')),))
    full = plan(answer, None)
    assert full.finish_reason == "tool_calls" and full.n_steps == 6
    assert full.reasoning == "abcd" and full.tool_calls[0]["function"] == {
        "name": "bash",
        "arguments": '{"command": 1}',
    }
    cut = plan(answer, 4)
    assert cut.finish_reason == "length" and cut.tool_calls[0]["function"]["arguments"] == '{"co'
    assert plan(Answer(), None).steps() == [(1, 0, "")]
    plain = plan(Answer(content=("ab", "cd", "ef")), 2)
    assert plain.steps() == [(1, 0, "ab"), (1, 0, "cd")] and plain.finish_reason == "length" and plain.content == "abcd"


def test_config_round_trips_through_arguments() -> None:
    from replay.sim.__main__ import parser

    config = SimConfig(
        replicas=3, router="round-robin", cache_tokens=None, fail_rate=0.1, fail_kinds=("500", "stall"), seed=9
    )
    args = vars(parser().parse_args(config_to_args(config)))
    args.pop("host"), args.pop("port")
    assert config_from_options(args) == config
    assert config_to_args(SimConfig()) == []
    with pytest.raises(SimConfigError, match="needs --shards"):
        SimConfig(answers="oracle")
    with pytest.raises(SimConfigError, match="--fail-kinds"):
        SimConfig(fail_kinds=("500", "oops"))


def test_affinity_router_is_stable_per_session() -> None:
    assert set(ROUTER_REGISTRY) == set(ROUTERS)
    config = SimConfig(replicas=4)
    replicas = [Replica(i, config) for i in range(4)]
    router = Router("affinity", replicas, "X-Session-ID")
    picks = {s: router.pick({"X-Session-ID": s}).index for s in (f"traj-{i}" for i in range(40))}
    assert all(router.pick({"X-Session-ID": s}).index == i for s, i in picks.items())
    assert len(set(picks.values())) == 4
    rr = Router("round-robin", replicas, "X-Session-ID")
    assert [rr.pick({"X-Session-ID": "same"}).index for _ in range(5)] == [0, 1, 2, 3, 0]


def virtual_latencies(concurrency: int, prompt: int = 2000, n_out: int = 50) -> tuple[float, float]:
    """Mean TTFT and ITL (modelled seconds) of `concurrency` simultaneous requests, by summing step
    durations on a virtual clock: no sleeping, no wall-clock assertions."""
    r = replica(cache_tokens=0)  # the default mid-size-GPU step model
    reqs = [r.submit(prompt, (), n_out) for _ in range(concurrency)]
    clock = 0.0
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    while not all(q.done for q in reqs):
        duration, touched = r._step()
        clock += duration
        r._publish(touched)
        for q in touched:
            first.setdefault(id(q), clock)
            last[id(q)] = clock
    ttft = sum(first.values()) / concurrency
    itl = sum((last[id(q)] - first[id(q)]) / (n_out - 1) for q in reqs) / concurrency
    return ttft, itl


def test_latency_reacts_to_load_like_a_server() -> None:
    ttft_1, itl_1 = virtual_latencies(1)
    ttft_64, itl_64 = virtual_latencies(64)
    assert ttft_1 == pytest.approx((8 + 0.04 * 2000 + 0.1) / 1000)  # a + b·prefill + c·1
    assert ttft_64 > 5 * ttft_1  # prefill of 64 prompts queues behind the step budget
    assert itl_1 == pytest.approx((8 + 0.1) / 1000)
    assert itl_64 > itl_1 * 1.5  # a larger batch makes every step longer
