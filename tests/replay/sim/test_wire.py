"""The simulator's OpenAI wire shapes, read over real loopback HTTP."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from sim_http import chat, complete, stream

from replay.sim import FINGERPRINT


def test_stream_shape_with_tools(sim_server: str) -> None:
    s = stream(sim_server, chat(tools=True, max_tokens=None))
    assert s.status == 200 and s.error is None and s.done
    assert s.headers["content-type"].startswith("text/event-stream")
    events = s.events()
    assert all(e["system_fingerprint"] == FINGERPRINT and e["model"] == "test-model" for e in events)
    deltas = s.deltas()
    assert deltas[0] == {"role": "assistant"}
    kinds = [next(iter(d)) for d in deltas[1:-1]]
    # reasoning first, then the tool call; never content in a tool-calling synthetic answer
    first_tool = kinds.index("tool_calls")
    assert kinds[:first_tool] and set(kinds[:first_tool]) == {"reasoning_content"}
    assert set(kinds[first_tool:]) == {"tool_calls"}
    head = deltas[1 + first_tool]["tool_calls"][0]
    assert head["index"] == 0 and head["type"] == "function" and head["id"].startswith("call_")
    assert head["function"] == {"name": "bash", "arguments": ""}
    rest = [d["tool_calls"][0] for d in deltas[2 + first_tool : -1]]
    assert rest and all(set(t) == {"index", "function"} and set(t["function"]) == {"arguments"} for t in rest)
    arguments = json.loads("".join(t["function"]["arguments"] for t in rest))
    assert list(arguments) == ["command"] and arguments["command"]
    final = [e for e in events if e["choices"] and e["choices"][0]["finish_reason"]]
    assert (
        len(final) == 1
        and final[0]["choices"][0]["finish_reason"] == "tool_calls"
        and final[0]["choices"][0]["delta"] == {}
    )
    usage = events[-1]
    assert usage["choices"] == [] and events[-2] is final[0]
    u = usage["usage"]
    assert u["completion_tokens"] == len(deltas) - 2  # one SSE event per decode step
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    assert u["prompt_tokens_details"]["cached_tokens"] == 0


def test_content_stream_capped_by_max_completion_tokens(sim_server: str) -> None:
    s = stream(sim_server, chat(max_tokens=7))
    deltas = s.deltas()
    assert deltas[0] == {"role": "assistant"} and all(set(d) == {"content"} for d in deltas[1:-1])
    assert len(deltas) - 2 == 7 and s.events()[-2]["choices"][0]["finish_reason"] == "length"
    assert s.events()[-1]["usage"]["completion_tokens"] == 7


def test_usage_only_when_asked(sim_server: str) -> None:
    body = chat(max_tokens=5)
    del body["stream_options"]
    s = stream(sim_server, body)
    assert s.done and all(e["choices"] for e in s.events())


def test_answers_depend_on_content_not_order(sim_server: str) -> None:
    a, b = chat("alpha question", max_tokens=40), chat("beta question", max_tokens=40)
    b["messages"][0]["content"] = "other"
    with httpx.Client(timeout=30) as client:
        first = [complete(client, sim_server, x)["choices"][0]["message"] for x in (a, b)]
        second = [complete(client, sim_server, x)["choices"][0]["message"] for x in (b, a)]
    assert first == second[::-1] and first[0] != first[1]
    streamed = "".join(d.get("content", "") for d in stream(sim_server, a).deltas())
    assert streamed == first[0]["content"]


def test_non_streaming_response_and_cached_tokens(sim_server: str) -> None:
    body = chat("x" * 2000, tools=True, max_tokens=None)
    with httpx.Client(timeout=30) as client:
        one, two = complete(client, sim_server, body), complete(client, sim_server, body)
    msg = one["choices"][0]["message"]
    assert one["object"] == "chat.completion" and one["system_fingerprint"] == FINGERPRINT
    assert (
        msg["role"] == "assistant" and msg["reasoning_content"] and msg["tool_calls"][0]["function"]["name"] == "bash"
    )
    assert one["choices"][0]["finish_reason"] == "tool_calls"
    assert one["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    cached = two["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert 0 < cached < two["usage"]["prompt_tokens"] and cached % 16 == 0


def test_server_is_honest_about_being_a_simulation(sim_server: str) -> None:
    health = httpx.get(sim_server + "/health").json()
    assert health["simulated"] is True and health["system_fingerprint"] == FINGERPRINT
    models = httpx.get(sim_server + "/v1/models").json()
    assert models["data"][0]["owned_by"] == FINGERPRINT and models["data"][0]["simulated"] is True
    assert 'trajbench_sim_info{simulated="true"} 1' in httpx.get(sim_server + "/metrics").text


def test_server_send_timestamps_on_request(sim_server: str) -> None:
    before = time.monotonic_ns()
    s = stream(sim_server, chat(max_tokens=20), headers={"X-Sim-Timestamps": "1"})
    after = time.monotonic_ns()
    stamps = [e["sim_t_ns"] for e in s.events()]
    assert len(stamps) == 20 + 3 and s.done  # role, 20 tokens, finish, usage
    assert stamps == sorted(stamps) and before <= stamps[0] and stamps[-1] <= after
    assert "sim_t_ns" not in stream(sim_server, chat(max_tokens=3)).events()[0]


@pytest.mark.parametrize(
    ("payload", "headers", "status", "words"),
    [
        (b"{not json", {}, 400, "not JSON"),
        (b'{"messages": []}', {}, 400, "non-empty list"),
        (b'{"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 0}', {}, 400, "positive integer"),
        (b'{"messages": [{"role": "user", "content": "x"}]}', {"X-Sim-Fault": "gremlins"}, 400, "unknown fault"),
    ],
)
def test_bad_requests_say_what_is_wrong(
    sim_server: str, payload: bytes, headers: dict[str, str], status: int, words: str
) -> None:
    r = httpx.post(sim_server + "/v1/chat/completions", content=payload, headers=headers)
    assert r.status_code == status and words in r.json()["error"]["message"]


@pytest.mark.slow
def test_same_seed_same_answers_in_another_process(sim_server: str, start_sim) -> None:
    zero = {"step_base_ms": 0.0, "prefill_ms_per_token": 0.0, "batch_ms_per_seq": 0.0}
    other, reseeded = start_sim(fresh=True, **zero).base_url, start_sim(seed=1, **zero).base_url
    body = chat("determinism", tools=True, max_tokens=None)
    with httpx.Client(timeout=30) as client:
        answers = [complete(client, url, body)["choices"][0]["message"] for url in (sim_server, other, reseeded)]
    assert answers[0] == answers[1] != answers[2]
