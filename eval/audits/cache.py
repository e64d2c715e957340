"""The two cache audits (docs/audits.md), judged from a run's cache analysis (`analyze cache`,
docs/cache.md: per turn, the ideal reusable prefix and the tokens the server said it cached).

- *cache exploit*: a turn cached beyond its ideal reusable prefix reused what the design forbids:
  tokens the server generated itself (the history marker should have stopped the match) or
  another trajectory's or repeat's prompt (the salt should have).
- *warm cache*: a first turn of an instance has no earlier prompt of its own in the run, so all
  it may reuse is its cross-instance share; beyond that, the cache held the run's prompts before
  the run began (the salts are the same in every run). The engine's prefix-cache counters, read
  before the first turn, tell it too: a hit before the run is traffic before it, unless the run
  reset the cache first (`--flush-cache`), after which earlier counts no longer mean a warm cache.

Both allow one block (an engine caches whole blocks, and a shared text may end inside a token)
and, on a turn whose server counted the prompt otherwise than the client (another template or
vocabulary), the difference between the two counts: the comparison is no finer than that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replay import RunInfo
from replay.cacheobs import CacheAnalysis, CacheTurn
from replay.engine import CacheMetrics

from .model import SHOWN, AuditResult, OffendingTurn

#: Series names whose value counts prefix-cache hits (a rate included): vLLM's
#: `prefix_cache_hits`, SGLang's `cache_hit_rate`, the simulator's `prompt_tokens_cached_total`.
HIT_WORDS = ("hit", "cached")


def allowance(row: CacheTurn, block: int) -> int:
    """One block, plus the server/client count difference of the prompt when the server counted it."""
    diff = abs(row.server_prompt_tokens - row.isl) if row.server_prompt_tokens is not None else 0
    return block + diff


def _over(rows: Sequence[CacheTurn], block: int, limit_of: Callable[[CacheTurn], int]) -> list[OffendingTurn]:
    out = []
    for r in rows:
        limit = limit_of(r) + allowance(r, block)
        if r.cached > limit:
            out.append(OffendingTurn(r.instance_id, r.turn, "cached", r.cached, limit))
    return out


def _example(o: OffendingTurn, base: str) -> str:
    assert o.value is not None and o.limit is not None
    return f"{o.instance_id} turn {o.turn}: {o.value} cached, at most {o.limit} ({base} + allowance)"


def cache_exploit(point: str, a: CacheAnalysis, rows: Sequence[CacheTurn]) -> AuditResult:
    over = _over(rows, a.block_size, lambda r: r.ideal)
    figures = {
        "turns": len(rows),
        "offending_turns": len(over),
        "surplus_tokens": sum((o.value or 0) - (o.limit or 0) for o in over),
        "ideal_tokens": a.ideal_tokens,
        "cached_tokens": a.cached_tokens,
        "hit_rate_of_ideal": a.hit_rate_of_ideal,
        "block_size": a.block_size,
        "block_size_source": a.block_size_source,
        "count_mismatch_turns": a.count_mismatch_turns,
        "tokenizer": a.tokenizer,
    }
    if not rows:
        return AuditResult("cache-exploit", point, False, _no_rows(a), figures)
    if over:
        reason = (
            f"{len(over)} of {len(rows)} turns cached beyond their ideal reusable prefix "
            f"({a.hit_rate_of_ideal:.1%} of the ideal cached over the run), e.g. {_example(over[0], 'ideal')}: "
            "the server reused tokens the history marker or the salt should have kept from it (docs/audits.md)"
        )
        return AuditResult("cache-exploit", point, False, reason, figures, over[:SHOWN])
    reason = (
        f"no turn of {len(rows)} cached beyond its ideal reusable prefix + one block ({a.block_size}, "
        f"{a.block_size_source}); {a.hit_rate_of_ideal:.1%} of the ideal cached"
    )
    return AuditResult("cache-exploit", point, True, reason, figures)


def _no_rows(a: CacheAnalysis) -> str:
    if a.turns_without_cached:
        return (
            f"the server reported no cached-token count on its {a.turns_without_cached} answered turns "
            "(usage.prompt_tokens_details.cached_tokens), so the cache cannot be audited"
        )
    return "no answered turn to judge"


def hits_before(metrics: CacheMetrics | None) -> tuple[dict[str, float] | None, str]:
    """The hit series above zero in the scrape before the first turn (None: none was read), and
    what the scrape said."""
    if metrics is None:
        return None, "no cache_metrics.json (the run read no /metrics)"
    if not metrics.before.ok:
        return None, f"/metrics not read before the run ({metrics.before.error})"
    found = {n: v for n, v in metrics.before.series.items() if any(w in n for w in HIT_WORDS) and v > 0}
    return found, "read before the first turn"


def warm_cache(
    point: str, info: RunInfo, a: CacheAnalysis, rows: Sequence[CacheTurn], metrics: CacheMetrics | None
) -> AuditResult:
    first = [r for r in rows if r.within == 0]
    over = _over(first, a.block_size, lambda r: r.cross)
    hits, scraped = hits_before(metrics)
    flush = info.cache_flush
    counters_warm = bool(hits) and flush is None
    figures = {
        "first_turns": len(first),
        "offending_turns": len(over),
        "block_size": a.block_size,
        "cache_flush": f"{flush.route}: HTTP {flush.status}" if flush is not None else None,
        "counters_before": scraped,
        "hits_before": hits,
    }
    problems = []
    if over:
        problems.append(
            f"{len(over)} of {len(first)} first turns cached beyond their cross-instance share, e.g. "
            f"{_example(over[0], 'cross-instance share')}"
        )
    if counters_warm:
        assert hits is not None
        shown = ", ".join(f"{n} {v:g}" for n, v in sorted(hits.items())[:3])
        problems.append(f"the engine's counters showed cache hits before the run ({shown})")
    if problems:
        fix = (
            "the reset did not empty it (a cache the engine keeps beside its prefix cache?)"
            if flush is not None
            else "restart the server or pass --flush-cache"
        )
        reason = "; ".join(problems) + f": the cache was warm from earlier traffic; {fix} (docs/audits.md)"
        return AuditResult("warm-cache", point, False, reason, figures, over[:SHOWN])
    if not first:
        return AuditResult("warm-cache", point, False, _no_rows(a), figures)
    how = (
        f"the cache was reset before the run ({flush.route}: HTTP {flush.status})"
        if flush is not None
        else "the engine's counters showed no cache hit before the run"
        if hits is not None
        else f"the engine's counters are unknown ({scraped})"
    )
    return AuditResult(
        "warm-cache", point, True, f"{len(first)} first turns within their cross-instance share; {how}", figures
    )
