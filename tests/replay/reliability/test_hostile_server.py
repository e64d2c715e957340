"""Servers that never stop sending, or send slowly: every response is size-capped and every turn
has one deadline, so a hostile server fails its turns with a clear kind instead of eating the
client's memory or outliving the turn timeout. Peak RSS is measured in a child process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import DONE, END, FINISH, SSE_HEAD, Behave, Conn, HostileServer, Request, chunk, delta
from reliability_helpers import cli_measured, summary_of

from replay import ResponseLimits
from replay.client.sse import SSEParser
from replay.config import RunConfig
from replay.results.records import read_records
from replay.run import run_replay

#: What a hostile server here sends at most: far more than the caps, bounded so that a broken
#: client (the code before the caps) fails the test instead of exhausting a shared machine.
_FLOOD_BYTES = 1 << 30


def replay(shards: Path, out: Path, url: str, **kw: Any) -> Path:
    return asyncio.run(run_replay(RunConfig(shards=str(shards), endpoint=url, out=str(out), progress="none", **kw)))


def _flood(conn: Conn, req: Request, n: int) -> bool:
    """A stream that never ends: content events as fast as the socket takes them."""
    conn.send(SSE_HEAD)
    piece = chunk(delta("x") * 500)
    sent = 0
    while sent < _FLOOD_BYTES and conn.send(piece):
        sent += len(piece)
    conn.client_gone(30)
    return False


def _endless_headers(conn: Conn, req: Request, n: int) -> bool:
    conn.send(b"HTTP/1.1 200 OK\r\n")
    block = (b"X-Filler: " + b"a" * 100 + b"\r\n") * 1000
    sent = 0
    while sent < _FLOOD_BYTES and conn.send(block):
        sent += len(block)
    conn.client_gone(30)
    return False


def _one_line(size: int) -> Behave:
    def behave(conn: Conn, req: Request, n: int) -> bool:
        text = b"y" * size
        event = b'data: {"choices":[{"index":0,"delta":{"content":"' + text + b'"},"finish_reason":null}]}\n\n'
        return conn.send(SSE_HEAD + chunk(event) + chunk(FINISH) + chunk(DONE) + END)

    return behave


def _huge_json(conn: Conn, req: Request, n: int) -> bool:
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % _FLOOD_BYTES)
    block = b" " * (1 << 20)
    sent = 0
    while sent < _FLOOD_BYTES and conn.send(block):
        sent += len(block)
    return False


def _trickle(conn: Conn, req: Request, n: int) -> bool:
    """One content event every 0.1 s, forever: never idle long enough for a read timeout."""
    conn.send(SSE_HEAD)
    while conn.send(chunk(delta("z"))):
        if conn.client_gone(0.1):
            break
    return False


def _silent(conn: Conn, req: Request, n: int) -> bool:
    conn.client_gone(30)
    return False


# ---- memory: the hostile case in a child process, its peak RSS bounded
@pytest.mark.parametrize(
    ("behave", "options", "message"),
    [
        (
            _flood,
            ["--max-response-mb", "16"],
            "too_large: the response exceeded 16 MiB (raise the cap with --max-response-mb)",
        ),
        (
            _endless_headers,
            [],
            "too_large: the response head (status line and headers) exceeded 64 KiB (raise the cap with --max-header-kb)",
        ),
    ],
    ids=["endless-stream", "endless-headers"],
)
@pytest.mark.slow
def test_an_endless_response_fails_its_turn_within_a_memory_bound(
    behave: Behave, options: list[str], message: str, make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    shards = make_shards({"h1": [0.0, 0.0]})
    out = tmp_path / "run"
    with HostileServer(behave) as srv:
        code, _stdout, stderr, peak_mib = cli_measured(
            ["replay", "run", str(shards), "--endpoint", srv.url, "--out", str(out), "--turn-timeout", "20", *options]
        )
    assert code == 3, stderr
    assert f"Error: the 1 issued turn failed (too_large 1); nothing was measured. First error: {message}." in stderr
    first, second = read_records(out)
    assert (first.error_kind, second.error_kind) == ("too_large", "aborted")
    assert summary_of(out)["trajbench"]["errors_by_kind"] == {"aborted": 1, "too_large": 1}
    assert peak_mib < 300, f"peak RSS {peak_mib:.0f} MiB"  # unbounded before the caps (GBs)


# ---- the caps, in-process
@pytest.mark.slow
def test_the_default_response_cap_is_64_mib(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    with HostileServer(_flood) as srv:
        # a generous deadline: folding 64 MiB of events takes seconds of CPU on a loaded machine
        run_dir = replay(make_shards({"h1": [0.0]}), tmp_path / "run", srv.url, turn_timeout=90)
    (r,) = read_records(run_dir)
    assert (r.error_kind, r.error_message) == (
        "too_large",
        "the response exceeded 64 MiB (raise the cap with --max-response-mb)",
    )


def test_a_json_body_instead_of_a_stream_is_capped_too(make_shards: Callable[..., Path], tmp_path: Path) -> None:
    with HostileServer(_huge_json) as srv:
        run_dir = replay(
            make_shards({"h1": [0.0]}),
            tmp_path / "run",
            srv.url,
            turn_timeout=20,
            limits=ResponseLimits(max_response_bytes=4 << 20),
        )
    (r,) = read_records(run_dir)
    assert (r.error_kind, r.error_message) == (
        "too_large",
        "the response exceeded 4 MiB (raise the cap with --max-response-mb)",
    )


def test_a_10_mb_sse_line_fails_the_turn_unless_the_event_cap_is_raised(
    make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    shards = make_shards({"h1": [0.0]})
    with HostileServer(_one_line(10 << 20)) as srv:
        capped = replay(shards, tmp_path / "capped", srv.url)
        raised = replay(shards, tmp_path / "raised", srv.url, limits=ResponseLimits(max_event_bytes=16 << 20))
    (r,) = read_records(capped)
    assert (r.error_kind, r.error_message) == (
        "too_large",
        "an SSE line is longer than 8 MiB (raise the cap with --max-event-mb)",
    )
    (ok,) = read_records(raised)
    assert ok.ok and len(ok.content) == 10 << 20


def test_an_event_split_over_endless_data_lines_is_capped() -> None:
    parser = SSEParser(max_event_bytes=1024)
    events = []
    for _ in range(100):
        events += parser.feed(b'data: {"choices": [' + b"1," * 20 + b"\n")
        if parser.done:
            break
    assert events == [("too_large", "an SSE event is longer than 1 KiB (raise the cap with --max-event-mb)")]


# ---- the turn timeout is one deadline over the whole exchange
@pytest.mark.parametrize("behave", [_trickle, _silent], ids=["trickling-stream", "no-response"])
def test_the_turn_timeout_bounds_the_whole_exchange(
    behave: Behave, make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    shards = make_shards({"h1": [0.0]})
    with HostileServer(behave) as srv:
        run_dir = replay(shards, tmp_path / "run", srv.url, turn_timeout=1.0)
    (r,) = read_records(run_dir)
    assert (r.error_kind, r.error_message) == ("timeout", "no complete answer within 1 s; the request was cancelled")
    # the deadline ended the turn: the server would have gone on for 30 s (or forever)
    assert r.t_last_ns is not None and (r.t_last_ns - r.t_send_ns) / 1e9 < 15
    assert json.loads((run_dir / "performance" / "result_summary.json").read_text())["trajbench"]["errors_by_kind"] == {
        "timeout": 1
    }


# ---- a chunk of a shape the parser does not expect: the turn, never the run
_BAD_SHAPES = (
    b'data: {"choices":{"index":0,"delta":{"content":"x"}}}\n\n',  # choices an object
    b'data: {"choices":[{"index":0,"delta":"x"}]}\n\n',  # delta a string
)


def _bad_shape(conn: Conn, req: Request, n: int) -> bool:
    bad = _BAD_SHAPES[n % len(_BAD_SHAPES)]
    return conn.send(SSE_HEAD + chunk(delta("a")) + chunk(bad) + chunk(delta("b")) + chunk(FINISH) + chunk(DONE) + END)


def test_a_chunk_of_an_unexpected_shape_fails_the_preflight_with_a_message(
    make_shards: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hostile import answer
    from reliability_helpers import cli_in_process

    with HostileServer(answer, preflight=_bad_shape) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"t": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run")],
            capsys,
        )
    assert code == 1 and "Traceback" not in stderr
    assert "failed: malformed: a chunk of an unexpected shape (choices is not a list)" in stderr


@pytest.mark.slow
def test_a_chunk_of_an_unexpected_shape_is_recorded_and_the_run_goes_on_across_workers(
    make_shards: Callable[..., Path], tmp_path: Path
) -> None:
    """Every other turn carries a bad chunk: each such turn is partial (`malformed`) with the
    rest of its output, its trajectory goes on, and a two-worker run finishes."""
    from hostile import answer

    def every_other(conn: Conn, req: Request, n: int) -> bool:
        return _bad_shape(conn, req, n) if n % 2 else answer(conn, req, n)

    shards = make_shards({"a": [0.0, 0.0], "b": [0.0, 0.0]})
    with HostileServer(every_other) as srv:
        code, _stdout, stderr, _ = cli_measured(
            [
                *("replay", "run", str(shards), "--endpoint", srv.url, "--out", str(tmp_path / "run")),
                *("-c", "2", "--workers", "2", "--no-delays"),
            ]
        )
    assert code == 0 and "Traceback" not in stderr, stderr
    recs = list(read_records(tmp_path / "run"))
    assert len(recs) == 4 and {r.error_kind for r in recs} == {None, "malformed"}
    assert all(r.content == "ab" for r in recs if r.error_kind == "malformed")
    assert summary_of(tmp_path / "run")["trajbench"]["turns"]["partial_by_kind"] == {"malformed": 2}
