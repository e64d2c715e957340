"""Each injected fault produces exactly that fault; seeded selection depends on content only."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from sim_http import chat, stream

from replay.sim import FAULT_KINDS, SimConfig
from replay.sim.faults import pick_fault


def forced(kind: str) -> dict[str, str]:
    return {"X-Sim-Fault": kind}


def test_http_500(sim_server: str) -> None:
    s = stream(sim_server, chat(), forced("500"))
    assert s.status == 500 and json.loads(s.lines[0])["error"]["code"] == 500


def test_http_429_with_retry_after(sim_server: str) -> None:
    s = stream(sim_server, chat(), forced("429"))
    assert s.status == 429 and s.headers["retry-after"] == "1"
    assert json.loads(s.lines[0])["error"]["type"] == "rate_limit_error"


def test_reset_before_headers(sim_server: str) -> None:
    s = stream(sim_server, chat(), forced("reset"))
    assert s.status == 0 and isinstance(s.error, httpx.RemoteProtocolError) and not s.lines


def test_midstream_close_without_done(sim_server: str) -> None:
    s = stream(sim_server, chat(max_tokens=40), forced("midstream"))
    assert s.status == 200 and isinstance(s.error, httpx.RemoteProtocolError)
    deltas = s.deltas()
    assert deltas[0] == {"role": "assistant"} and len(deltas) == 1 + 20  # half the answer
    assert not s.done and all(e["choices"][0]["finish_reason"] is None for e in s.events())


def test_error_object_in_a_200_stream(sim_server: str) -> None:
    s = stream(sim_server, chat(), forced("error-object"))
    assert s.status == 200 and s.error is None and s.done
    events = s.events()
    assert events[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert len(events) == 2 and events[1]["error"]["code"] == 500 and "simulated" in events[1]["error"]["message"]


def test_malformed_data_line(sim_server: str) -> None:
    s = stream(sim_server, chat(), forced("malformed"))
    assert s.status == 200 and s.done and len(s.lines) == 3
    json.loads(s.lines[0])
    with pytest.raises(json.JSONDecodeError):
        json.loads(s.lines[1])


#: A stall of one second, after which the simulator drops the connection: the tests see the stall
#: end on the server's clock, not on a client timeout a loaded machine could trip early.
SHORT_STALL = pytest.mark.parametrize("sim_server", [{"stall_seconds": 1.0}], indirect=True)


@SHORT_STALL
def test_stall_after_first_chunk(sim_server: str) -> None:
    started = time.monotonic()
    s = stream(sim_server, chat(), forced("stall"))
    assert s.status == 200 and isinstance(s.error, httpx.RemoteProtocolError)
    assert len(s.lines) == 1 and json.loads(s.lines[0])["choices"][0]["delta"] == {"role": "assistant"}
    assert time.monotonic() - started >= 1.0  # nothing more came for the whole stall


def test_forcing_none_overrides_the_fail_rate(start_sim) -> None:
    url = start_sim(
        step_base_ms=0.0, prefill_ms_per_token=0.0, batch_ms_per_seq=0.0, fail_rate=1.0, fail_kinds=("500",)
    ).base_url
    assert stream(url, chat(), forced("none")).done
    assert stream(url, chat()).status == 500


@pytest.mark.slow
def test_seeded_fault_selection_is_by_content(start_sim) -> None:
    url = start_sim(
        step_base_ms=0.0, prefill_ms_per_token=0.0, batch_ms_per_seq=0.0, fail_rate=0.5, fail_kinds=("500", "429")
    ).base_url
    bodies = [chat(f"question {i}", max_tokens=2) for i in range(30)]
    with httpx.Client(timeout=30) as client:
        runs = [
            [client.post(url + "/v1/chat/completions", json=b).status_code for b in order]
            for order in (bodies, bodies[::-1])
        ]
    assert runs[0] == runs[1][::-1]
    assert set(runs[0]) == {200, 500, 429}


def test_fault_rate_and_kind_mix() -> None:
    config = SimConfig(fail_rate=0.2, seed=7)
    picks = [pick_fault(config, os.urandom(16), None) for _ in range(20_000)]
    failed = [p for p in picks if p]
    assert abs(len(failed) / len(picks) - 0.2) < 0.02
    assert set(failed) == set(FAULT_KINDS)
    digest = b"\x01" * 16
    assert pick_fault(config, digest, None) == pick_fault(SimConfig(fail_rate=0.2, seed=7), digest, None)
    assert pick_fault(SimConfig(), digest, None) is None


@SHORT_STALL
@pytest.mark.parametrize("kind", ["error-object", "malformed", "midstream", "stall"])
def test_stream_faults_of_non_streaming_requests(sim_server: str, kind: str) -> None:
    body = {**chat(), "stream": False}
    try:
        r = httpx.post(sim_server + "/v1/chat/completions", json=body, headers=forced(kind), timeout=30)
    except httpx.HTTPError as exc:
        assert kind in ("midstream", "stall")  # both end with the connection dropped
        assert isinstance(exc, httpx.RemoteProtocolError)
        return
    assert r.status_code == 200 and kind in ("error-object", "malformed")
    if kind == "error-object":
        assert r.json()["error"]["code"] == 500
    else:
        with pytest.raises(json.JSONDecodeError):
            json.loads(r.text)
