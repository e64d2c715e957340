"""Goodput under SLOs (docs/metrics.md): hand-made records with known answers, the SLO parser's
errors, and the two properties that hold for any run (goodput <= throughput; no limit at all ->
goodput = throughput)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records import record

from replay import ReplayError, Slo, parse_slo
from replay.report.sweep_table import sweep_table
from replay.results.goodput import active_seconds, goodput, turn_met
from replay.results.metrics import trajbench_metrics
from replay.results.records import Record

S = 1_000_000_000
MS = 1_000_000


def rec(
    instance: str,
    turn: int,
    send_ms: int,
    ttft_ms: int | None,
    e2e_ms: int,
    out: int,
    *,
    after_first: int | None = None,
    error: str | None = None,
    in_window: bool = True,
) -> Record:
    send = send_ms * MS
    return record(
        instance_id=instance,
        trajectory_id=instance,
        turn=turn,
        client_turn_index=turn,
        prompt_sha256="x",
        salt_repeat="",
        salt_conversation="",
        t_send_ns=send,
        t_first_ns=None if ttft_ms is None else send + ttft_ms * MS,
        t_last_ns=send + e2e_ms * MS,
        chunk_ns=(),
        in_window=in_window,
        content="x" * out,
        finish_reason=None if error else "stop",
        prompt_tokens=10,
        completion_tokens=None if error else out,
        http_status=None if error else 200,
        error_kind=error,
        error_message=error,
        first_chunk_chars=1,
        client_tokens_after_first=(out - 1 if after_first is None else after_first) if not error else None,
    )


# Two sessions over a 10 s window (first send at 0, last completion at 10 s).
#   A: turn 0 TTFT 100 ms, E2E 1000 ms, 10 tokens -> TPOT 900/9 = 100 ms
#      turn 2 TTFT 500 ms, E2E 2000 ms, 31 tokens -> TPOT 1500/30 = 50 ms
#   B: turn 0 TTFT 200 ms, E2E 10000 ms, 101 tokens -> TPOT 9800/100 = 98 ms (sent at 0 ms)
#      turn 2 failed
RECORDS = [
    rec("A", 0, 0, 100, 1000, 10),
    rec("A", 2, 3000, 500, 2000, 31),
    rec("B", 0, 0, 200, 10_000, 101),
    rec("B", 2, 9000, None, 500, 0, error="http"),
]


def test_goodput_of_hand_made_records() -> None:
    duration = 10 * S
    # TTFT <= 300 ms: A0 and B0 (111 tokens) meet it, A2 does not
    g = goodput(RECORDS, parse_slo("ttft_ms=300"), duration)
    assert (g.turns, g.turns_met, g.output_tokens_met) == (3, 2, 111)
    assert g.output_tokens_per_s == pytest.approx(11.1)
    assert g.turns_met_share == pytest.approx(2 / 3)
    # sessions: A has a turn over the TTFT limit, B a failed turn: none meets its SLO
    assert (g.sessions, g.sessions_met, g.session_output_tokens_per_s) == (2, 0, 0.0)

    # TPOT <= 99 ms: A2 (50) and B0 (98) meet it, A0 (100) does not
    g = goodput(RECORDS, parse_slo("tpot_ms=99"), duration)
    assert (g.turns_met, g.output_tokens_met) == (2, 132)

    # the session limit alone: A is active 3.0 s (delays left out); B failed a turn, so never good
    assert active_seconds([r for r in RECORDS if r.instance_id == "A"]) == pytest.approx(3.0)
    g = goodput(RECORDS, parse_slo(None, 3.0), duration)
    assert (g.turns_met, g.sessions_met, g.session_output_tokens_met) == (3, 1, 41)
    assert g.session_output_tokens_per_s == pytest.approx(4.1)
    assert goodput(RECORDS, parse_slo(None, 2.999), duration).sessions_met == 0

    # both limits at once, as run.json records them
    slo = parse_slo("ttft_ms=600,tpot_ms=100", 3.0)
    assert slo == Slo(600.0, 100.0, 3.0) and slo.turn_spec() == "ttft_ms=600,tpot_ms=100"
    g = goodput(RECORDS, slo, duration)
    assert (g.turns_met, g.sessions_met, g.session_output_tokens_met) == (3, 1, 41)


def test_a_session_cut_off_by_the_end_of_the_run_is_not_judged() -> None:
    """A would meet a 3 s session limit on the two turns it sent, but its trajectory has 3: the
    run ended first. B ended on a failed turn (judged, not met); C finished all its 2 turns."""
    records = [*RECORDS, rec("C", 0, 0, 100, 500, 5), rec("C", 2, 1000, 100, 500, 7)]
    lengths = {"A": 3, "B": 3, "C": 2}
    slo = parse_slo(None, 3.0)
    g = goodput(records, slo, 10 * S, lengths)
    assert (g.sessions, g.sessions_met, g.sessions_incomplete, g.session_output_tokens_met) == (2, 1, 1, 12)
    assert goodput(records, slo, 10 * S, {**lengths, "A": 2}).sessions_met == 2  # A ended after all
    # without the trajectories' lengths every session counts as ended, unless a turn was cancelled
    assert goodput(records, slo, 10 * S).sessions_incomplete == 0
    cut = [*records[:-1], rec("C", 2, 1000, 100, 500, 7, error="cancelled")]
    assert goodput(cut, slo, 10 * S).sessions_incomplete == 1
    # per turn nothing changes: the turns are judged whatever their session
    assert goodput(records, parse_slo("ttft_ms=300"), 10 * S, lengths).turns_met == 4
    numbers = trajbench_metrics(records, slo=slo, trajectory_turns=lengths)
    assert numbers.goodput == g


def test_a_partial_turn_ends_no_session() -> None:
    """A partial turn (its stream broke) does not end its trajectory, so a session cut off after
    one is incomplete, not judged; a failed turn ends it (judged, not met)."""
    slo = parse_slo(None, 3.0)
    partial = [rec("P", 0, 0, 100, 500, 5), rec("P", 2, 600, 100, 500, 5, error="stream")]
    failed = [rec("F", 0, 0, 100, 500, 5), rec("F", 2, 600, 100, 500, 5, error="http")]
    g = goodput(partial + failed, slo, 10 * S, {"P": 3, "F": 3})
    assert (g.sessions, g.sessions_met, g.sessions_incomplete) == (1, 0, 1)


def test_a_turn_without_a_first_token_fails_a_ttft_limit_and_one_without_tpot_meets_a_tpot_limit() -> None:
    silent = rec("C", 0, 0, None, 100, 0)
    single = rec("C", 2, 0, 50, 100, 1, after_first=0)  # one token: no TPOT
    assert not turn_met(silent, parse_slo("ttft_ms=1000"))
    assert turn_met(single, parse_slo("tpot_ms=1"))
    assert turn_met(silent, parse_slo("tpot_ms=1"))


def test_the_summary_carries_goodput_only_with_an_slo() -> None:
    assert trajbench_metrics(RECORDS).goodput is None
    numbers = trajbench_metrics(RECORDS, slo=parse_slo("ttft_ms=300"))
    assert numbers.goodput is not None
    assert numbers.goodput.output_tokens_per_s <= numbers.throughput.output_tokens_per_s
    # the sweep table grows two goodput columns only then
    plain, judged = sweep_table([(1, "done", trajbench_metrics(RECORDS))]), sweep_table([(1, "done", numbers)])
    assert "goodput" not in plain[0] and "goodput tok/s" in judged[0] and "session goodput" in judged[0]
    assert judged[2].split()[-2:] == ["11.1", "0.0"]


@pytest.mark.parametrize(
    ("text", "session", "error"),
    [
        ("ttft=5", None, "is not KEY=VALUE with KEY one of ttft_ms, tpot_ms"),
        ("ttft_ms", None, "is not KEY=VALUE"),
        ("ttft_ms=fast", None, "ttft_ms='fast' is not a number of milliseconds"),
        ("ttft_ms=1,ttft_ms=2", None, "ttft_ms is given twice"),
        ("tpot_ms=0", None, "--slo tpot_ms must be a number > 0"),
        ("tpot_ms=nan", None, "--slo tpot_ms must be a number > 0"),
        (None, -1.0, "--session-slo must be a number > 0"),
    ],
)
def test_bad_slos_are_refused_with_the_fix(text: str | None, session: float | None, error: str) -> None:
    with pytest.raises(ReplayError) as exc:
        parse_slo(text, session)
    assert error in str(exc.value)


def test_infinite_limits_are_no_limits() -> None:
    assert parse_slo("ttft_ms=inf, tpot_ms=inf", math.inf) == Slo()
    assert not Slo().given and Slo().turn_spec() is None


# --------------------------------------------------------------------------- properties
_turn = st.tuples(
    st.sampled_from(["A", "B", "C", "D"]),
    st.integers(0, 20_000),  # send, ms
    st.one_of(st.none(), st.integers(1, 5_000)),  # TTFT, ms
    st.integers(0, 5_000),  # E2E after TTFT, ms
    st.integers(0, 500),  # output tokens
    st.booleans(),  # failed
    st.booleans(),  # in window
)


def _records(raw: list[tuple[str, int, int | None, int, int, bool, bool]], *, failures: bool) -> list[Record]:
    out = []
    for k, (inst, send, ttft, rest, n, failed, win) in enumerate(raw):
        e2e = (ttft or 0) + rest + 1
        out.append(rec(inst, 2 * k, send, ttft, e2e, n, error="http" if failed and failures else None, in_window=win))
    return out


_limit = st.one_of(st.none(), st.floats(0.5, 10_000))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_turn, min_size=1, max_size=30),
    _limit,
    _limit,
    st.one_of(st.none(), st.floats(0.01, 60)),
    st.dictionaries(st.sampled_from(["A", "B", "C", "D"]), st.integers(1, 12)),  # trajectories' lengths
)
def test_goodput_never_exceeds_throughput(
    raw: list[Any], ttft: float | None, tpot: float | None, sess: float | None, lengths: dict[str, int]
) -> None:
    records = _records(raw, failures=True)
    slo = Slo(ttft, tpot, sess) if (ttft or tpot or sess) else Slo(ttft_ms=1e12)
    numbers = trajbench_metrics(records, slo=slo, trajectory_turns=lengths)
    g = numbers.goodput
    assert g is not None
    tput = numbers.throughput.output_tokens_per_s
    assert g.output_tokens_per_s <= tput + 1e-9
    assert g.session_output_tokens_per_s <= g.output_tokens_per_s + 1e-9
    assert g.turns_met <= g.turns and g.sessions_met <= g.sessions
    assert g.sessions + g.sessions_incomplete == len({r.instance_id for r in records if r.ok and r.in_window})


@settings(max_examples=150, deadline=None)
@given(st.lists(_turn, min_size=1, max_size=30))
def test_infinite_slos_give_goodput_equal_to_throughput(raw: list[Any]) -> None:
    records = _records(raw, failures=False)
    unlimited = parse_slo("ttft_ms=inf,tpot_ms=inf", math.inf)
    numbers = trajbench_metrics(records)
    g = goodput(records, unlimited, numbers.window.duration_ns)
    assert g.turns_met == g.turns and g.sessions_met == g.sessions
    assert g.output_tokens_per_s == numbers.throughput.output_tokens_per_s
    assert g.session_output_tokens_per_s == numbers.throughput.output_tokens_per_s
