"""Hostile answers outside the chat stream, and one memory budget across concurrency (docs/files.md
lists the caps): every GET the tool makes (/v1/models, /health, /metrics, /version, server info)
and the tokenizer routes read a bounded body within one deadline and parse bounded JSON, so an
endless or deeply nested answer costs bounded memory and never a traceback; and the responses of
all slots of a worker share one budget, so C slots of a hostile server do not multiply the per-turn
cap. Peak RSS is measured in a child process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import SSE_HEAD, Conn, HostileServer, Request, answer, chunk, delta
from reliability_helpers import cli_measured

from replay.results.records import read_records

#: What a hostile server sends at most: far more than any cap, bounded so that a client without
#: the caps fails the test instead of exhausting a shared machine.
_FLOOD_BYTES = 1 << 30


def _endless_get(conn: Conn, req: Request, n: int) -> bool:
    """An answer to every GET that never ends: a JSON array that keeps growing."""
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    block = chunk(b"[" + b"0," * (1 << 19))
    sent = 0
    while sent < _FLOOD_BYTES and conn.send(block):
        sent += len(block)
    conn.client_gone(30)
    return False


def _nested_get(conn: Conn, req: Request, n: int) -> bool:
    """A deeply nested JSON answer to every GET (200 000 levels: Python's json recursion fails)."""
    body = b'{"a":' * 200_000 + b"1" + b"}" * 200_000
    return conn.send(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


@pytest.mark.parametrize("get", [_endless_get, _nested_get], ids=["endless", "nested"])
@pytest.mark.slow
def test_a_hostile_get_costs_bounded_memory_and_the_run_goes_on(
    get: Callable[[Conn, Request, int], bool], make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    """With --skip-preflight the run still identifies the server (GET /v1/models, /health) and
    scrapes /metrics: each answer is capped (or its nesting refused) and the turns are answered."""
    shards = make_shards({"h1": [0.0, 0.0]})
    out = tmp_path / "run"
    with HostileServer(answer, get=get) as srv:
        code, _, stderr, peak_mib = cli_measured(
            ["replay", "run", str(shards), "--endpoint", srv.url, "--out", str(out), "--skip-preflight"]
        )
    assert code == 0, stderr
    assert "Traceback" not in stderr and "RecursionError" not in stderr
    assert [r.error_kind for r in read_records(out)] == [None, None]
    assert peak_mib < 300, f"peak RSS {peak_mib:.0f} MiB"  # 2.5 GB before the caps


def test_a_hostile_models_list_fails_the_preflight_clearly(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    shards = make_shards({"h1": [0.0]})
    with HostileServer(answer, get=_endless_get) as srv:
        code, _, stderr, peak_mib = cli_measured(
            ["replay", "run", str(shards), "--endpoint", srv.url, "--out", str(tmp_path / "run")]
        )
    assert code == 1, stderr
    assert f"Error: preflight: GET {srv.url}/v1/models: the answer exceeded 4 MiB" in stderr
    assert peak_mib < 300, f"peak RSS {peak_mib:.0f} MiB"


@pytest.mark.parametrize("get", [_endless_get, _nested_get], ids=["endless", "nested"])
@pytest.mark.slow
def test_check_template_against_hostile_info_routes_is_a_clear_error(
    get: Callable[[Conn, Request, int], bool], make_shards: Callable[..., Path]
) -> None:
    shards = make_shards({"h1": [0.0]})
    with HostileServer(answer, get=get) as srv:
        code, _, stderr, peak_mib = cli_measured(
            ["traces", "check-template", str(shards), "--endpoint", srv.url, "--tokenizer", "qwen3.6", "--timeout", "5"]
        )
    assert code == 1, stderr
    assert "Error: " in stderr and "cannot tell which engine this is" in stderr and "Traceback" not in stderr
    assert peak_mib < 600, f"peak RSS {peak_mib:.0f} MiB"


# ---- one memory budget across concurrency
def _flood(conn: Conn, req: Request, n: int) -> bool:
    """A stream that never ends, one tiny content event at a time (the costliest to hold)."""
    conn.send(SSE_HEAD)
    piece = chunk(delta("x") * 500)
    sent = 0
    while sent < _FLOOD_BYTES and conn.send(piece):
        sent += len(piece)
    conn.client_gone(30)
    return False


@pytest.mark.slow
def test_concurrent_endless_streams_share_one_memory_budget(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    """C=8 slots against a server whose every answer is endless: the slots share the worker's
    --memory-budget-mb (each turn gets its share), so the peak does not grow with C (8 x the
    16 MiB per-turn cap held about 8 x 40 MB before)."""
    shards = make_shards({f"h{k}": [0.0] for k in range(8)})
    out = tmp_path / "run"
    with HostileServer(_flood) as srv:
        code, _, stderr, peak_mib = cli_measured(
            [
                "replay", "run", str(shards), "--endpoint", srv.url, "--out", str(out), "-c", "8",
                "--max-response-mb", "16", "--memory-budget-mb", "32", "--turn-timeout", "30",
            ]
        )  # fmt: skip
    assert code == 3, stderr
    recs = list(read_records(out))
    assert len(recs) == 8 and {r.error_kind for r in recs} == {"too_large"}
    assert {r.error_message for r in recs} == {
        "the response exceeded 4 MiB (this worker's share of --memory-budget-mb 32 over its 8 slots; "
        "raise --memory-budget-mb, or spread the slots with --workers)"
    }
    assert peak_mib < 300, f"peak RSS {peak_mib:.0f} MiB"


# ---- a body shorter than its Content-Length
def _short_error(conn: Conn, req: Request, n: int) -> bool:
    body = b'{"error": {"message": "overloaded"}}'
    conn.send(
        b"HTTP/1.1 503 X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body) + 999, body)
    )
    conn.client_gone(60)  # the socket stays open: only the client can end the exchange
    return False


@pytest.mark.slow
def test_an_error_body_shorter_than_its_length_does_not_hold_the_slot(
    make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    """It used to wait for --turn-timeout and record a timeout; now the turn fails as the HTTP
    error it is, a second after the last byte."""
    out = tmp_path / "run"
    with HostileServer(_short_error) as srv:
        args = ["replay", "run", str(make_shards({"h1": [0.0]})), "--endpoint", srv.url, "--out", str(out)]
        code, _, stderr, _ = cli_measured([*args, "--skip-preflight", "--turn-timeout", "60"])
    assert code == 3, stderr
    (r,) = read_records(out)
    assert (r.error_kind, r.http_status, r.error_message) == ("http", 503, "HTTP 503: overloaded")
    # failed as the HTTP error it is, long before the turn's 60 s deadline would have ended it
    assert r.t_last_ns is not None and (r.t_last_ns - r.t_send_ns) < 30e9
