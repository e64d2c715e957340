"""The files `trajbench analyze cache` writes: `cache_analysis.json` (typed) and the per-turn rows
(`cache_turns.parquet`), and the causes a deficit is attributed to, with their rules (docs/cache.md)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pyarrow as pa

import traces

from ..results import CACHE_ANALYSIS_FILE

#: The causes in precedence order (the first whose rule holds is the turn's); `none` is a turn
#: whose server-reported cached tokens reach its ideal.
CAUSES = (
    "none",
    "block_granularity",
    "marker_salt",
    "affinity_miss",
    "eviction",
    "template_drift",
    "unexplained",
)

#: Each cause's rule, as docs/cache.md states it (kept in cache_analysis.json beside the figures).
RULES = {
    "none": "deficit <= 0: the server cached at least the ideal reusable prefix",
    "block_granularity": "0 < deficit <= block size: an engine caches whole blocks only",
    "marker_salt": "the turn had no earlier prompt of its own instance (first turn, or the tool list changed) "
    "and its deficit is at most its cross-instance share + block size: the salt's cold start, expected by design",
    "affinity_miss": "the replica header differs from the session's previous turn's",
    "eviction": "same replica as the previous turn (or none recorded), other sessions' prompts were served in "
    "between (pressure > 0), and the endpoint's eviction counter rose over the run (or it has none)",
    "template_drift": "the engine's tokens part from the client's before the end of the ideal reusable prefix, so "
    "its cache key differs: a template check (--template-check) of this turn's or the session's previous turn's "
    "prompt diverged inside that prompt at a position < ideal (drift_evidence check); for turns no check covers "
    "(a re-salted repeat past the stored ones is not covered), the server's prompt tokens differ from the ISL by "
    "more than a block (drift_evidence count): the engine rendered or tokenised another prompt (another template "
    "or another vocabulary), so the deficit, counted in the client's tokens, is not exact",
    "unexplained": "none of the rules above holds",
}

#: The charts `analyze cache` draws into a run folder, and into a sweep folder.
CHARTS = ("cache_deficit_by_cause.png", "cache_hit_vs_delay.png", "cache_hit_vs_isl.png")
SWEEP_CHART = "cache_deficit_vs_concurrency.png"


@dataclass(frozen=True)
class CacheTurn:
    """One analysed turn (a row of cache_turns.parquet)."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turn: int
    t_send_s: float  # since the run's first send
    replica: str | None
    prev_replica: str | None
    isl: int  # the run tokenizer's count of the prompt
    server_prompt_tokens: int | None
    within: int  # tokens shared with the instance's previous prompt
    cross: int  # further tokens shared with another instance's earlier prompt
    ideal: int  # min(within + cross, isl - 1)
    cached: int  # server-reported cached tokens
    deficit: int  # ideal - cached (negative: the server reused more than the ideal)
    hit_rate: float | None  # cached / ideal (None when the ideal is 0)
    cause: str
    delay_s: float  # the recorded delay waited before the turn
    gap_s: float | None  # from the previous turn's last byte to this send
    pressure_tokens: int  # other sessions' prompt tokens served between (same replica if known)
    in_flight: int  # other turns in flight when this one was sent
    template_checked: bool  # the template check covered this turn or the session's previous turn
    engine_divergence: int | None  # the earliest first divergent position of those checked (None: identical/unchecked)
    # what shows drift (whichever cause won): "check" (a template check diverged inside the prompt before
    # the ideal: exact), "count" (an uncovered turn's server count differs by more than a block: another
    # template or vocabulary, so its deficit is not exact), None (no drift evidence)
    drift_evidence: str | None


TURN_SCHEMA = pa.schema(
    [
        ("instance_id", pa.string()),
        ("trajectory_id", pa.string()),
        ("repeat", pa.int64()),
        ("turn", pa.int64()),
        ("t_send_s", pa.float64()),
        ("replica", pa.string()),
        ("prev_replica", pa.string()),
        ("isl", pa.int64()),
        ("server_prompt_tokens", pa.int64()),
        ("within", pa.int64()),
        ("cross", pa.int64()),
        ("ideal", pa.int64()),
        ("cached", pa.int64()),
        ("deficit", pa.int64()),
        ("hit_rate", pa.float64()),
        ("cause", pa.string()),
        ("delay_s", pa.float64()),
        ("gap_s", pa.float64()),
        ("pressure_tokens", pa.int64()),
        ("in_flight", pa.int64()),
        ("template_checked", pa.bool_()),
        ("engine_divergence", pa.int64()),
        ("drift_evidence", pa.string()),
    ]
)
assert TURN_SCHEMA.names == [f.name for f in fields(CacheTurn)]


@dataclass(frozen=True)
class CauseTotal:
    cause: str
    turns: int
    deficit_tokens: int  # the positive deficits of its turns, summed
    share: float  # of all positive deficit tokens


@dataclass(frozen=True)
class CacheAnalysis(traces.JsonFile):
    """cache_analysis.json: a run's cache deficit and its causes (docs/cache.md)."""

    FILE = CACHE_ANALYSIS_FILE

    run: str  # the run folder's name
    dataset: str
    tokenizer: str
    block_size: int
    block_size_source: str  # "given", "inferred" (gcd of the cached counts) or "unknown"
    concurrency: int
    replica_header: str | None
    turns: int  # analysed: finished turns whose server reported cached tokens
    turns_without_cached: int  # finished turns whose server gave no cached-token count
    failed_turns: int
    ideal_tokens: int
    cached_tokens: int
    deficit_tokens: int  # the positive deficits, summed
    surplus_turns: int  # turns whose cached tokens exceeded the ideal by more than a block
    hit_rate_of_ideal: float  # cached / ideal tokens over the run
    within_block_share: float  # share of turns whose deficit is at most the block size
    # turns whose server prompt count differs from the run tokenizer's ISL by more than a block: the
    # engine renders or counts prompts otherwise, so those deficits are not exact (docs/cache.md)
    count_mismatch_turns: int
    evictions_rose: float | None  # the endpoint's eviction counters' rise (None: not exposed/scraped)
    metrics: str  # what cache_metrics.json said: "scraped", "none", or the failure
    causes: list[CauseTotal]
    rules: dict[str, str]
    # the template-parity report read (--template-check): its file name and sha256, and the analysed
    # turns it covered (the turn or the session's previous turn checked); None / 0 without one
    template_check: str | None = None
    template_check_sha256: str | None = None
    template_check_turns: int = 0
    # count-mismatch turns no template check covered: drift there rests on the count alone (all of the
    # count-mismatch turns without a check)
    count_fallback_turns: int = 0
    # the run's target was trajbench's simulator: its figures describe the simulator, and without
    # its own --tokenizer they are counted in its units (`tokenizer` says so, docs/cache.md)
    simulated: bool = False

    def cause(self, name: str) -> CauseTotal:
        return next(c for c in self.causes if c.cause == name)
