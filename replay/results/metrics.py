"""The numbers of a run, computed from its records (docs/metrics.md). Pure functions, no I/O.

Two views of the same records:

- `reference_metrics`: the reference client's keys with the reference's meanings, so its tools
  read our `result_summary.json` and agree with it. Its turns are the *tracked* ones, those issued
  before the performance window closed; a turn aborted after a failure counts as issued, a failed
  turn (`Record.failed`) as completed with an error (its latency is the time to the failure, an
  aborted turn's is 0), a partial turn (`Record.partial`: the response started but broke, or
  carried an error object or a malformed line) as completed without one, on what arrived, as the
  reference completes it; a turn cancelled in flight by an interrupt was issued but never
  completed. Token counts are the client tokenizer's, the reference's only method: a run without
  one leaves the token keys as empty as the reference leaves them (`input_sequence_lengths` and
  `output_sequence_lengths` `{}`, `tps` null).
- `trajbench_metrics`: trajbench's own breakdown (sent, ok, partial by kind, failed, aborted,
  cancelled), and the distributions over the window turns that *succeeded* (`Record.ok`), so no
  failure or partial answer is ever mixed into them; per-user speed (pooled, per trajectory, per
  turn), ITL, measured cache hits, token sources (server usage first, the client tokenizer second).

Timings stay in nanoseconds (the reference's unit); reports show milliseconds.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from traces import __version__, distribution

from .goodput import goodput
from .numbers import (
    AllTurns,
    CachedTokens,
    Interactivity,
    PerTrajectory,
    ReferenceMetrics,
    RunNumbers,
    Throughput,
    TokenMethod,
    TokenSources,
    TurnCounts,
    Turns,
)
from .numbers import Window as WindowNumbers
from .records import FAILED_KINDS, PARTIAL_KINDS, Record, e2e_ns, itl_ns, tokens_after_first, tpot_ns, ttft_ns
from .rollup import rollup
from .slo import Slo

#: The finish reasons the reference counts by name; any other goes to "other".
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")


@dataclass(frozen=True)
class Window:
    start_ns: int | None  # send time of the run's first request
    close_ns: int | None  # first slot that finished a trajectory and found the FIFO empty
    end_ns: int | None  # last completion of the window turns that succeeded


def sent(records: Iterable[Record]) -> list[Record]:
    """Turns that were sent (every record but the aborted ones, which never left the client)."""
    return [r for r in records if r.error_kind != "aborted"]


def window_of(records: Sequence[Record], close_ns: int | None) -> Window:
    out = sent(records)
    start = min((r.t_send_ns for r in out), default=None)
    ends = [r.t_last_ns for r in out if r.in_window and r.ok and r.t_last_ns is not None]
    return Window(start, close_ns, max(ends) if ends else None)


def _completed_at(r: Record) -> int:
    """When the reference would see this turn complete: the last byte or the failure; an
    aborted turn completes the moment it is aborted."""
    if r.error_kind == "aborted" or r.t_last_ns is None:
        return r.t_send_ns
    return r.t_last_ns


def token_method(records: Sequence[Record], tokenizer: bool | None = None) -> TokenMethod:
    """Which counts the reference keys use: "client" (the run's tokenizer, the reference's only
    method) when the run had one and the records hold its counts, else None (the keys stay
    empty). `tokenizer` says whether the run had one (run.json); None: the records tell."""
    answered = [r for r in records if not r.failed]
    if tokenizer is None:
        tokenizer = any(r.client_output_tokens is not None for r in answered)
    if not tokenizer:
        return TokenMethod(None, None)
    isl = "client" if any(r.client_prompt_tokens is not None for r in records) else None
    osl = "client" if any(r.client_output_tokens is not None for r in answered) else None
    return TokenMethod(isl, osl)


def reference_metrics(
    records: Sequence[Record],
    *,
    window_close_ns: int | None = None,
    started_ns: int = 0,
    state: str = "complete",
    tokenizer: bool | None = None,
) -> ReferenceMetrics:
    """The reference's counters and metrics (see the module docstring for what each means);
    `state` says whether the run completed or was interrupted, `tokenizer` whether the run had one
    (None: the records tell)."""
    tracked = [r for r in records if r.in_window]
    completed = [r for r in tracked if r.error_kind != "cancelled"]
    failed = [r for r in completed if r.failed]
    answered = [r for r in completed if not r.failed]  # the reference's successes: ok or partial
    start = window_of(records, window_close_ns).start_ns
    end = max((_completed_at(r) for r in completed), default=None)
    duration_ns = end - start if start is not None and end is not None and end > start else None
    method = token_method(records, tokenizer)
    isl = (
        [r.client_prompt_tokens for r in sent(tracked) if r.client_prompt_tokens is not None]
        if method.input == "client"
        else []
    )
    osl = (
        [r.client_output_tokens for r in answered if r.client_output_tokens is not None]
        if method.output == "client"
        else []
    )
    tpot = [
        (r.t_last_ns - r.t_first_ns) / r.client_tokens_after_first
        for r in answered
        if r.client_tokens_after_first and r.t_first_ns is not None and r.t_last_ns is not None
    ]
    seconds = duration_ns / 1e9 if duration_ns else None
    reasons = Counter(
        r.finish_reason if r.finish_reason in FINISH_REASONS else "other"
        for r in completed
        if isinstance(r.finish_reason, str)
    )
    return ReferenceMetrics(
        version=__version__,
        git_sha=None,
        test_started_at=started_ns,
        n_samples_issued=len(tracked),
        n_samples_completed=len(completed),
        n_samples_failed=len(failed),
        duration_ns=duration_ns,
        state=state,
        complete=state == "complete",
        ttft=rollup([v for r in tracked if (v := ttft_ns(r)) is not None], early_stopping=True),
        tpot=rollup(tpot, early_stopping=True),
        latency=rollup([_completed_at(r) - r.t_send_ns for r in completed], early_stopping=True),
        output_sequence_lengths=rollup(osl),
        input_sequence_lengths=rollup(isl),
        legacy_loadgen_window_duration_ns=None,  # the reference's LoadGen window applies to Poisson runs only
        qps=len(completed) / seconds if seconds else None,
        tps=sum(osl) / seconds if seconds and osl else None,
        finish_reason_counts={k: reasons.get(k, 0) for k in (*FINISH_REASONS, "other")},
    )


def _sum_known(values: Iterable[int | None]) -> int:
    return sum(v for v in values if v is not None)


def _breakdown(records: Sequence[Record]) -> TurnCounts:
    kinds = Counter(r.error_kind for r in records)
    partial = {k: kinds[k] for k in sorted(k for k in kinds if k in PARTIAL_KINDS)}
    return TurnCounts(
        sent=sum(n for k, n in kinds.items() if k != "aborted"),
        ok=kinds.get(None, 0),
        failed=sum(n for k, n in kinds.items() if k in FAILED_KINDS and k not in ("aborted", "cancelled")),
        aborted=kinds.get("aborted", 0),
        cancelled=kinds.get("cancelled", 0),
        partial=sum(partial.values()),
        partial_by_kind=partial,
        dropped_reasoning_chars=sum(r.dropped_reasoning_chars for r in records),
        dropped_reasoning_turns=sum(1 for r in records if r.dropped_reasoning_chars),
    )


def trajbench_metrics(
    records: Sequence[Record],
    *,
    window_close_ns: int | None = None,
    interrupted: bool = False,
    crashed: bool = False,
    slo: Slo | None = None,
    trajectory_turns: Mapping[str, int] | None = None,
    tokenizer: bool | None = None,
) -> RunNumbers:
    """trajbench's own numbers: every distribution over the window turns that succeeded; goodput
    when the run has an SLO (`replay.results.goodput`; `trajectory_turns` tells its ended sessions)."""
    window_turns = [r for r in sent(records) if r.in_window]
    good = [r for r in window_turns if r.ok]
    win = window_of(records, window_close_ns)
    duration_ns = (win.end_ns - win.start_ns) if win.start_ns is not None and win.end_ns is not None else 0
    duration_s = duration_ns / 1e9
    out_tokens = [r.output_tokens() for r in good]
    total_out = _sum_known(out_tokens)
    e2e = [v for r in good if (v := e2e_ns(r)) is not None]
    e2e_s_sum = sum(e2e) / 1e9
    tpots: list[float] = []
    tpot_how: Counter[str] = Counter()  # how each TPOT's denominator was counted
    for r in good:
        if (tpot := tpot_ns(r)) is not None and (after := tokens_after_first(r)) is not None:
            tpots.append(tpot)
            tpot_how[after[1]] += 1
    errors = Counter(r.error_kind for r in records if r.error_kind is not None)
    return RunNumbers(
        turns=Turns(**vars(_breakdown(records)), window=_breakdown([r for r in records if r.in_window])),
        window=WindowNumbers(win.start_ns, win.close_ns, win.end_ns, win.close_ns is not None, duration_ns),
        throughput=Throughput(
            output_tokens_per_s=total_out / duration_s if duration_s > 0 else 0.0,
            requests_per_s=len(good) / duration_s if duration_s > 0 else 0.0,
            output_tokens=total_out,
        ),
        interactivity=Interactivity(
            e2e_interactivity=total_out / e2e_s_sum if e2e_s_sum > 0 else 0.0,
            output_tokens_sum=total_out,
            e2e_seconds_sum=e2e_s_sum,
            per_trajectory=distribution(per_trajectory_speed(good)),
            per_turn=distribution(
                [
                    n / (t / 1e9)
                    for r in good
                    if (n := r.output_tokens()) is not None and (t := e2e_ns(r)) is not None and t > 0
                ]
            ),
        ),
        ttft=distribution([v for r in good if (v := ttft_ns(r)) is not None]),
        tpot=distribution(tpots),
        tpot_denominator=dict(sorted(tpot_how.items())),
        latency=distribution(e2e),
        itl=distribution([gap for r in good for gap in itl_ns(r)]),
        input_sequence_lengths=distribution([v for v in (_input_tokens(r) for r in good) if v is not None]),
        output_sequence_lengths=distribution([v for v in out_tokens if v is not None]),
        token_method=token_method(records, tokenizer),
        tokens=token_sources(good),
        cached_tokens=cached(good),
        per_trajectory=per_trajectory_stats(sent(records)),
        finish_reasons=dict(sorted(Counter(r.finish_reason or "none" for r in good).items())),
        errors_by_kind=dict(sorted(errors.items())),
        all_turns=AllTurns(
            output_tokens=_sum_known(r.output_tokens() for r in records if r.ok),
            completed=sum(1 for r in records if r.ok),
            out_of_window=len(sent(records)) - len(window_turns),
        ),
        interrupted=interrupted,
        crashed=crashed,
        goodput=goodput(records, slo, duration_ns, trajectory_turns) if slo is not None and slo.given else None,
    )


def _input_tokens(r: Record) -> int | None:
    return r.prompt_tokens if r.prompt_tokens is not None else r.client_prompt_tokens


def per_trajectory_speed(good: Sequence[Record]) -> list[float]:
    """Per-user speed of each trajectory instance: its output tokens / its Σ E2E (delays are
    outside turn times, so this is the seed's "E2E time minus delays" without client overhead)."""
    tok: dict[str, int] = defaultdict(int)
    sec: dict[str, float] = defaultdict(float)
    for r in good:
        n = r.output_tokens()
        if n is None or r.t_last_ns is None:
            continue
        tok[r.instance_id] += n
        sec[r.instance_id] += (r.t_last_ns - r.t_send_ns) / 1e9
    return [tok[k] / sec[k] for k in sorted(tok) if sec[k] > 0]


def token_sources(good: Sequence[Record]) -> TokenSources:
    """Where the output counts the numbers use came from (the client tokenizer's first, else a
    server usage that can be true: `Record.output_tokens`), and the client − server difference
    where both exist."""
    out_both = [
        c - s for r in good if (c := r.client_output_tokens) is not None and (s := r.completion_tokens) is not None
    ]
    in_both = [c - s for r in good if (c := r.client_prompt_tokens) is not None and (s := r.prompt_tokens) is not None]
    return TokenSources(
        output_from_server=sum(
            1 for r in good if r.client_output_tokens is None and r.server_output_tokens() is not None
        ),
        output_from_client=sum(1 for r in good if r.client_output_tokens is not None),
        output_unknown=sum(1 for r in good if r.output_tokens() is None),
        output_client_minus_server=distribution(out_both),
        input_from_server=sum(1 for r in good if r.prompt_tokens is not None),
        input_client_minus_server=distribution(in_both),
    )


def cached(good: Sequence[Record]) -> CachedTokens:
    """Measured prefix-cache hits: cached / prompt tokens over turns reporting both."""
    pairs = [(c, p) for r in good if (c := r.cached_tokens) is not None and (p := r.prompt_tokens)]
    c = sum(a for a, _ in pairs)
    t = sum(b for _, b in pairs)
    return CachedTokens(len(pairs), c, t, c / t if t else None, distribution([a / b for a, b in pairs]))


def per_trajectory_stats(sent_records: Sequence[Record]) -> PerTrajectory:
    """Instances started, failed (a failed turn ended them), cut by the window."""
    by: dict[str, list[Record]] = defaultdict(list)
    for r in sent_records:
        by[r.instance_id].append(r)
    failed = sum(1 for rs in by.values() if any(r.failed for r in rs))
    straddling = sum(1 for rs in by.values() if any(r.in_window for r in rs) and any(not r.in_window for r in rs))
    turns = [len(rs) for rs in by.values()]
    return PerTrajectory(len(by), failed, straddling, distribution(turns))
