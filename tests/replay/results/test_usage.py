"""Output tokens are the client's count when the run has one, and the server's usage is only
cross-checked against it (docs/metrics.md): an inflated or negative usage never moves the
headline; each turn's usage is flagged negative, absurd or off by the stated tolerance."""

from __future__ import annotations

from dataclasses import replace

import pytest
from metricrecords import RECORDS, S, rec

from replay.results import cross_check
from replay.results.metrics import trajbench_metrics
from replay.results.usage import usage_flag


@pytest.mark.parametrize(
    ("server", "client", "chars", "flag"),
    [
        (None, 400, 1600, None),  # no usage: nothing to judge
        (400, 400, 1600, None),
        (408, 400, 1600, None),  # within max(8, 10 %) = 40
        (440, 400, 1600, None),
        (441, 400, 1600, "off"),
        (12, 4, 40, None),  # small answers: 8 tokens of slack
        (13, 4, 40, "off"),
        (-1, 400, 1600, "negative"),
        (1633, None, 1600, "absurd"),  # more tokens than characters + 32
        (1632, None, 1600, None),
    ],
)
def test_each_turns_usage_flag(server: int | None, client: int | None, chars: int, flag: str | None) -> None:
    assert usage_flag(server, client, chars) == flag


def test_the_headline_counts_the_clients_tokens_whatever_usage_says() -> None:
    honest = trajbench_metrics(RECORDS, window_close_ns=3 * S)
    for lie in (lambda n: n * 400, lambda n: -n):
        lied = [
            replace(r, completion_tokens=lie(r.client_output_tokens)) if r.client_output_tokens else r for r in RECORDS
        ]
        numbers = trajbench_metrics(lied, window_close_ns=3 * S)
        assert numbers.throughput == honest.throughput
        assert numbers.interactivity.output_tokens_sum == honest.interactivity.output_tokens_sum


def test_a_negative_usage_is_never_a_count() -> None:
    r = rec("A", 1, 0.0, 0.1, 1.0, out=-50, content="hello")
    assert (r.output_tokens(), r.server_output_tokens()) == (None, None)
    assert trajbench_metrics([r]).throughput.output_tokens == 0


def test_cross_check_counts_flags_and_compares_the_means() -> None:
    text = "x" * 100
    records = [
        rec("A", 1, 0.0, 0.1, 1.0, out=50, client_out=50, content=text),
        rec("A", 3, 1.0, 1.1, 2.0, out=70, client_out=50, content=text),  # off by 20 > max(8, 5)
        rec("B", 1, 0.0, 0.1, 1.0, out=-3, client_out=50, content=text),
        rec("B", 3, 1.0, 1.1, 2.0, out=900, client_out=50, content=text),  # > 100 characters + 32
        rec("C", 1, 0.0, 0.1, 1.0, out=None, client_out=50, content=text),
        rec("C", 3, 1.0, None, None, error="http"),  # not answered: not judged
    ]
    u = cross_check(records)
    assert (u.turns, u.client_counted, u.server_counted, u.both) == (5, 5, 4, 4)
    assert u.flags == {"negative": 1, "absurd": 1, "off": 1} and u.impossible == 2
    assert [t.describe() for t in u.examples] == [
        "A turn 3: usage 70 (off; client 50, 100 characters)",
        "B turn 1: usage -3 (negative; client 50, 100 characters)",
        "B turn 3: usage 900 (absurd; client 50, 100 characters)",
    ]
    assert (u.client_mean, u.server_mean) == (50.0, (50 + 70 - 3 + 900) / 4)
    assert u.mean_difference == pytest.approx(((50 + 70 - 3 + 900) / 4 - 50) / 50)
