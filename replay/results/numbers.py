"""The typed parts of `result_summary.json` (docs/files.md): trajbench's own section, made of
`traces.Distribution`s. The reference's metric dicts keep the reference's shape (`rollup`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from traces import Distribution

from ..client import Connections

#: The reference's shape of one metric (total, min, max, median, avg, std_dev, percentiles, …).
Metric = dict[str, Any]


@dataclass(frozen=True)
class TurnCounts:
    """Turns by what became of them (docs/closed-loop.md): sent (every turn but the aborted), ok
    (a clean answer), failed (sent, failed as the reference fails a turn, a cancel aside),
    aborted (never sent: an earlier turn failed), cancelled (in flight when the run was
    interrupted), partial (the response started but is not a clean answer; by kind). sent = ok +
    failed + partial + cancelled. Reasoning dropped from deltas that also carried content, as
    the reference drops it: its characters and the turns it happened in (docs/metrics.md)."""

    sent: int
    ok: int
    failed: int
    aborted: int
    cancelled: int
    # 0 and empty in a file written before partial turns were told apart (they were `failed`)
    partial: int = 0
    partial_by_kind: dict[str, int] = field(default_factory=dict)
    dropped_reasoning_chars: int = 0
    dropped_reasoning_turns: int = 0


@dataclass(frozen=True)
class Turns(TurnCounts):
    window: TurnCounts = field(default_factory=lambda: TurnCounts(0, 0, 0, 0, 0))  # the same, over the window turns


@dataclass(frozen=True)
class Window:
    start_ns: int | None  # send time of the run's first request
    close_ns: int | None  # the first slot that finished a trajectory and found the FIFO empty
    end_ns: int | None  # the last completion of the window turns that succeeded
    closed: bool
    duration_ns: int


@dataclass(frozen=True)
class Throughput:
    output_tokens_per_s: float
    requests_per_s: float
    output_tokens: int


@dataclass(frozen=True)
class Interactivity:
    """Per-user speed: pooled (the headline) with both its sums, and the distributions beside it."""

    e2e_interactivity: float
    output_tokens_sum: int
    e2e_seconds_sum: float
    per_trajectory: Distribution
    per_turn: Distribution


@dataclass(frozen=True)
class TokenMethod:
    """How the reference keys count tokens: "client" (a tokenizer), "server" (usage) or None."""

    input: str | None
    output: str | None


@dataclass(frozen=True)
class TokenSources:
    output_from_server: int
    output_from_client: int
    output_unknown: int
    output_client_minus_server: Distribution
    input_from_server: int
    input_client_minus_server: Distribution


@dataclass(frozen=True)
class CachedTokens:
    turns_reporting: int
    cached_tokens_sum: int
    prompt_tokens_sum: int
    hit_rate: float | None
    per_turn_hit_rate: Distribution


@dataclass(frozen=True)
class PerTrajectory:
    instances: int
    failed: int
    straddling_window_close: int
    turns_per_instance: Distribution


@dataclass(frozen=True)
class AllTurns:
    output_tokens: int
    completed: int
    out_of_window: int


@dataclass(frozen=True)
class Goodput:
    """result_summary.json `trajbench.goodput` (docs/metrics.md)."""

    ttft_ms: float | None  # the limits judged by (None: no limit)
    tpot_ms: float | None
    session_s: float | None
    turns: int  # window turns that succeeded (the throughput's turns)
    turns_met: int  # of them, those that met the per-turn SLO
    output_tokens_met: int
    output_tokens_per_s: float  # goodput of turns
    turns_met_share: float | None
    sessions: int  # instances with at least one of those turns that ended (not cut off by the run's end)
    sessions_met: int  # instances that met the session SLO (and every turn the per-turn one)
    session_output_tokens_met: int
    session_output_tokens_per_s: float  # goodput of sessions
    sessions_met_share: float | None
    # instances with at least one of those turns cut off by the end of the run (not judged)
    sessions_incomplete: int = 0


@dataclass(frozen=True)
class RunNumbers:
    """trajbench's section of result_summary.json: every distribution is over the window turns
    that succeeded, so no failure ever enters one (docs/metrics.md)."""

    turns: Turns
    window: Window
    throughput: Throughput
    interactivity: Interactivity
    ttft: Distribution
    tpot: Distribution
    tpot_denominator: dict[str, int]  # how each TPOT's tokens after the first chunk were counted
    latency: Distribution
    itl: Distribution
    input_sequence_lengths: Distribution
    output_sequence_lengths: Distribution
    token_method: TokenMethod
    tokens: TokenSources
    cached_tokens: CachedTokens
    per_trajectory: PerTrajectory
    finish_reasons: dict[str, int]
    errors_by_kind: dict[str, int]
    all_turns: AllTurns
    interrupted: bool = False
    crashed: bool = False
    connections: Connections | None = None  # None: not known (an injected client, or an older run)
    goodput: Goodput | None = None  # None: the run had no SLO (--slo, --session-slo)


@dataclass(frozen=True)
class ReferenceMetrics:
    """The reference's keys of result_summary.json, in its order (all but `run_config`): the
    counters and metrics over the tracked turns (`metrics.reference_metrics`)."""

    version: str
    git_sha: str | None
    test_started_at: int
    n_samples_issued: int
    n_samples_completed: int
    n_samples_failed: int
    duration_ns: int | None
    state: str  # "complete" or "interrupted"
    complete: bool
    ttft: Metric
    tpot: Metric
    latency: Metric
    output_sequence_lengths: Metric
    input_sequence_lengths: Metric
    legacy_loadgen_window_duration_ns: int | None
    qps: float | None
    tps: float | None
    finish_reason_counts: dict[str, int]
