"""The endpoint's prefix-cache counters, scraped from its Prometheus `/metrics` before and after a
run and kept in `cache_metrics.json` (docs/cache.md): what `trajbench analyze cache` checks an
eviction against.

Engines name these series differently (vLLM `vllm:prefix_cache_queries_total`,
`vllm:gpu_prefix_cache_hits`; SGLang `sglang:cache_hit_rate`; the simulator
`trajbench_sim_prefix_cache_evicted_blocks_total`), so every series whose name says prefix cache,
cache hit, cached tokens or eviction is kept, summed over its labels (replicas, engines; a rate is
averaged). An
endpoint without `/metrics`, or one that fails, is recorded as such: a run never fails for it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import httpx

import traces

from ..client import METRICS_MAX_BYTES, BoundedReadError, aread_bounded, base_without_v1
from ..results import CACHE_METRICS_FILE

#: Substrings of series names that are prefix-cache facts.
CACHE_SERIES = ("prefix_cache", "cache_hit", "cached_tokens", "prompt_tokens_cached", "evict")
_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?$")
_SCRAPE_TIMEOUT_S = 5.0
_MAX_BYTES = METRICS_MAX_BYTES


@dataclass(frozen=True)
class Scrape:
    """One read of /metrics: the cache series (name → value summed over labels), or why not."""

    ok: bool
    error: str | None
    t_monotonic_ns: int
    series: dict[str, float]


@dataclass(frozen=True)
class CacheMetrics(traces.JsonFile):
    """`cache_metrics.json`: the scrapes before the first turn and after the last."""

    FILE = CACHE_METRICS_FILE

    before: Scrape
    after: Scrape | None

    def rise(self, word: str) -> float | None:
        """How much the series whose names hold `word` rose over the run (None: unknown)."""
        if self.after is None or not (self.before.ok and self.after.ok):
            return None
        names = [n for n in self.after.series if word in n]
        if not names:
            return None
        return sum(self.after.series[n] - self.before.series.get(n, 0.0) for n in names)


def cache_series(text: str) -> dict[str, float]:
    """The prefix-cache series of a Prometheus text page, each summed over its labels."""
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line.strip())
        if m is None:
            continue
        name = m.group(1)
        if name.endswith("_created") or not any(s in name for s in CACHE_SERIES):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if value == value:  # NaN carries nothing
            out[name] = out.get(name, 0.0) + value
            seen[name] = seen.get(name, 0) + 1
    # a rate (a gauge like `cache_hit_rate`) is averaged over its labels, a counter summed
    return {n: (v / seen[n] if "rate" in n else v) for n, v in sorted(out.items())}


async def scrape(base_url: str, *, api_key: str | None = None) -> Scrape:
    """GET {base}/metrics once; any failure becomes `ok=False` with the reason."""
    t = time.monotonic_ns()
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = base_without_v1(base_url) + "/metrics"
    try:
        async with httpx.AsyncClient(timeout=_SCRAPE_TIMEOUT_S, trust_env=False) as http:
            resp = await aread_bounded(
                http, "GET", url, headers=headers, max_bytes=_MAX_BYTES, deadline_s=_SCRAPE_TIMEOUT_S
            )
    except httpx.HTTPError as exc:
        return Scrape(False, f"GET /metrics failed: {type(exc).__name__}: {exc}", t, {})
    except BoundedReadError as exc:
        return Scrape(False, str(exc), t, {})
    if resp.status_code != 200:
        return Scrape(False, f"GET /metrics answered HTTP {resp.status_code}", t, {})
    return Scrape(True, None, t, cache_series(resp.text))
