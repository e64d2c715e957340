"""What `analyze cache` reads besides the shards: the replica a record keeps (only when the run
named a header), the prefix-cache series of an engine's /metrics page, the block-size guess and
the precedence of the causes (docs/cache.md)."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st
from records import record

from replay.cacheobs.causes import attribute, count_mismatch, drift_evidence, infer_block_size
from replay.cacheobs.drift import CheckedTurn, TemplateCheck
from replay.cacheobs.ideal import common_prefix, stored_repeat
from replay.engine.promscrape import CacheMetrics, Scrape, cache_series
from replay.results.records import record_from_dict, record_line


def test_the_replica_is_written_only_when_the_run_keeps_one() -> None:
    plain = record()
    assert b"replica" not in record_line(plain)
    assert record_from_dict(orjson.loads(record_line(plain))).replica is None
    kept = record(replica="3")
    assert orjson.loads(record_line(kept))["replica"] == "3"
    assert record_from_dict(orjson.loads(record_line(kept))) == kept


VLLM = """# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1200.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 800.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 900.0
vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7e9
vllm:num_requests_running{engine="0",model_name="m"} 3.0
sglang:cache_hit_rate{model_name="m"} 0.5
sglang:cache_hit_rate{model_name="n"} 0.25
trajbench_sim_prefix_cache_evicted_blocks_total{replica="0"} 4
trajbench_sim_prefix_cache_evicted_blocks_total{replica="1"} 6
"""


def test_the_cache_series_of_vllm_sglang_and_the_simulator() -> None:
    assert cache_series(VLLM) == {
        "sglang:cache_hit_rate": 0.375,  # a rate is averaged over its labels
        "trajbench_sim_prefix_cache_evicted_blocks_total": 10.0,  # a counter summed
        "vllm:prefix_cache_hits_total": 900.0,
        "vllm:prefix_cache_queries_total": 2000.0,
    }


def test_evictions_rose_only_when_both_scrapes_worked() -> None:
    before = Scrape(True, None, 1, {"x_evicted_blocks_total": 4.0})
    after = Scrape(True, None, 2, {"x_evicted_blocks_total": 10.0})
    assert CacheMetrics(before, after).rise("evict") == 6.0
    assert CacheMetrics(before, None).rise("evict") is None
    assert CacheMetrics(before, Scrape(False, "GET /metrics answered HTTP 404", 2, {})).rise("evict") is None
    assert CacheMetrics(before, Scrape(True, None, 2, {"vllm:prefix_cache_hits_total": 1.0})).rise("evict") is None


def test_the_block_size_is_the_gcd_of_the_cached_counts() -> None:
    assert infer_block_size([0, 32, 48, 160]) == 16
    assert infer_block_size([0, 0]) is None


def test_the_first_rule_that_holds_wins() -> None:
    kw = dict(
        block_size=16, within=100, cross=0, replica="0", prev_replica="1", pressure_tokens=500, evictions_rose=3.0
    )
    assert attribute(deficit=0, **kw) == "none"  # type: ignore[arg-type]
    assert attribute(deficit=16, **kw) == "block_granularity"  # type: ignore[arg-type]
    assert attribute(deficit=50, **{**kw, "within": 0, "cross": 40}) == "marker_salt"  # type: ignore[arg-type]
    assert attribute(deficit=50, **kw) == "affinity_miss"  # type: ignore[arg-type]
    assert attribute(deficit=50, **{**kw, "prev_replica": "0"}) == "eviction"  # type: ignore[arg-type]
    assert attribute(deficit=50, **{**kw, "prev_replica": None, "replica": None}) == "eviction"  # type: ignore[arg-type]
    # the endpoint counts evictions and counted none: not an eviction
    assert attribute(deficit=50, **{**kw, "prev_replica": "0", "evictions_rose": 0.0}) == "unexplained"  # type: ignore[arg-type]
    assert attribute(deficit=50, **{**kw, "prev_replica": "0", "pressure_tokens": 0}) == "unexplained"  # type: ignore[arg-type]
    # template drift comes after the cache's own causes, before unexplained
    quiet = {**kw, "prev_replica": "0", "pressure_tokens": 0}
    assert attribute(deficit=50, **quiet, drift=True) == "template_drift"  # type: ignore[arg-type]
    assert attribute(deficit=50, **{**kw, "prev_replica": "0"}, drift=True) == "eviction"  # type: ignore[arg-type]
    assert attribute(deficit=16, **quiet, drift=True) == "block_granularity"  # type: ignore[arg-type]


def test_drift_is_a_checked_divergence_inside_the_ideal_else_a_count_mismatch() -> None:
    assert drift_evidence(ideal=100, checked=True, inside_divergence=99, count_mismatch=False) == "check"
    assert drift_evidence(ideal=100, checked=True, inside_divergence=100, count_mismatch=True) is None  # at the end
    assert drift_evidence(ideal=100, checked=True, inside_divergence=None, count_mismatch=True) is None  # identical
    assert drift_evidence(ideal=100, checked=False, inside_divergence=None, count_mismatch=True) == "count"
    assert drift_evidence(ideal=100, checked=False, inside_divergence=None, count_mismatch=False) is None
    assert count_mismatch(120, 100, 16) and not count_mismatch(116, 100, 16) and not count_mismatch(None, 100, 16)


def test_a_divergence_at_the_checked_prompts_end_is_not_inside_it() -> None:
    check = TemplateCheck("p.json", "0" * 64, {("a", 1): CheckedTurn(50, 50), ("a", 3): CheckedTurn(40, 90)})
    tail = check.at("a", (None, 1))  # the engine only appended text after the whole prompt
    assert tail.checked and tail.divergence == 50 and tail.inside is None
    both = check.at("a", (1, 3))
    assert both.checked and both.divergence == 40 and both.inside == 40
    assert not check.at("a", (None, 2)).checked and not check.at("b", (None, 1)).checked


def test_a_logical_repeat_replays_its_stored_repeat_cyclically() -> None:
    assert [stored_repeat(r, 2) for r in range(1, 7)] == [1, 2, 1, 2, 1, 2]
    assert [stored_repeat(r, 1) for r in range(1, 4)] == [1, 1, 1]


@given(st.text(alphabet="ab\u00e9", max_size=300), st.text(alphabet="ab\u00e9", max_size=300), st.integers(0, 300))
def test_common_prefix_is_the_longest_shared_prefix(a: str, tail: str, k: int) -> None:
    b = a[:k] + tail
    want = 0
    while want < min(len(a), len(b)) and a[want] == b[want]:
        want += 1
    assert common_prefix(a, b) == want == common_prefix(b, a)
