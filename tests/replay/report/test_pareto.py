"""The frontier keeps exactly the non-dominated points; the step function never exceeds a
measured point; concurrency regions follow the 1 + 3 + 3 rule."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.report.pareto import Point, dominates, frontier, normalised, region_concurrencies, step_curve


def pt(x: float, y: float, c: int = 1, label: str = "a", inline_pass: bool | None = True) -> Point:
    return Point(label, f"run-{c}-{x}-{y}", c, x, y, 1.0, None, None, 0, 10, None, inline_pass, None, None)


def test_frontier_on_a_known_set() -> None:
    pts = [pt(10, 100, 1), pt(8, 300, 2), pt(5, 500, 4), pt(4, 450, 8), pt(2, 900, 16), pt(9, 90, 3)]
    front = frontier(pts)
    assert [(p.per_user_tps, p.throughput_tps) for p in front] == [(2, 900), (5, 500), (8, 300), (10, 100)]
    xs, ys = step_curve(front)
    assert xs == [0.0, 2, 2, 5, 5, 8, 8, 10]
    assert ys == [900, 900, 500, 500, 300, 300, 100, 100]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 1e3), st.floats(0.1, 1e5)), min_size=1, max_size=25))
def test_frontier_is_exactly_the_non_dominated_points(raw: list[tuple[float, float]]) -> None:
    pts = [pt(x, y, c) for c, (x, y) in enumerate(raw)]
    front = frontier(pts)
    for p in pts:
        assert (p in front) == (not any(dominates(q, p) for q in pts))
    # the staircase value at any x is a measured throughput of a point at least that fast
    xs, ys = step_curve(front)
    for x, y in zip(xs, ys, strict=True):
        assert any(p.throughput_tps == y and p.per_user_tps >= x for p in front)
        assert y <= max(p.throughput_tps for p in pts if p.per_user_tps >= x)


def test_step_curve_is_non_increasing() -> None:
    pts = [pt(x, 1000 / x, k) for k, x in enumerate([1, 2, 3, 5, 8, 13])]
    _, ys = step_curve(frontier(pts))
    assert all(a >= b for a, b in itertools.pairwise(ys))


def test_normalisation() -> None:
    assert normalised(1000.0, cost_per_hour=4.0, power_watts=500.0) == {"per_dollar_hour": 250.0, "per_watt": 2.0}
    assert normalised(1000.0) == {}


def test_regions() -> None:
    assert region_concurrencies(64) == [1, 2, 4, 8, 16, 32, 64]
    for cmax in (8, 16, 100, 128, 1000, 4096):
        cs = region_concurrencies(cmax)
        assert len(cs) >= 7 and len(cs) <= 32
        assert cs[0] == 1 and cs[-1] == cmax and cs == sorted(set(cs))
    assert region_concurrencies(4) == [1, 2, 3, 4]
