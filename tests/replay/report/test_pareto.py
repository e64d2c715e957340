"""The frontier keeps exactly the non-dominated points; the step function never exceeds a
measured point; concurrency regions follow the 1 + 3 + 3 rule."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.report import concurrency_regions, describe_regions, region_concurrencies
from replay.report.pareto import Point, dominates, frontier, normalised, step_curve


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
    assert region_concurrencies(64) == [1, 3, 5, 9, 17, 33, 64]
    for cmax in (8, 16, 100, 128, 1000, 4096):
        cs = region_concurrencies(cmax)
        assert len(cs) >= 7 and len(cs) <= 32
        assert cs[0] == 1 and cs[-1] == cmax and cs == sorted(set(cs))
    assert region_concurrencies(4) == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("c_min", "c_max", "ends"),
    [  # the worked examples of the Endpoints rules, section 5.4, by its section 5.5 algorithm
        (32, 8192, (32, 52, 437, 8192)),
        (1, 256, (1, 7, 41, 256)),
        # the rules' example C shows 116: it rounds the exponent first (2^6.652 = 100.4); the
        # algorithm, which the rules call authoritative, gives round(16 + 100.53) = 117
        (16, 1024, (16, 26, 117, 1024)),
    ],
)
def test_the_regions_are_the_rules_regions(c_min: int, c_max: int, ends: tuple[int, ...]) -> None:
    regions = concurrency_regions(c_max, c_min)
    assert [r.name for r in regions] == ["ultra-low", "low", "medium", "high"]
    assert tuple(r.end for r in regions) == ends
    assert [r.start for r in regions] == [1, *(e + 1 for e in ends[:-1])]


@pytest.mark.parametrize("cmax", [4, 8, 16, 33, 64, 100, 128, 256, 1000, 4096, 100_000])
def test_regions_puts_a_point_in_each_of_the_four_regions(cmax: int) -> None:
    """The 4 mandatory points (one per region) are always there, so the SWE-bench runs have
    their concurrencies; the top point is --max-concurrency."""
    cs = region_concurrencies(cmax)
    for r in concurrency_regions(cmax):
        assert any(r.holds(c) for c in cs), (r, cs)
    assert 7 <= len(cs) <= 32 or len(cs) == cmax


def test_regions_are_described_with_their_points() -> None:
    assert describe_regions([1, 3, 5, 9, 17, 33, 64], 64) == (
        "ultra-low 1: 1; low 2-5: 3, 5; medium 6-17: 9, 17; high 18-64: 33, 64"
    )
