"""The numbers of a run, computed from its records (SPEC §8). Pure functions, no I/O.

Which turns count: *issued* turns are every record except "aborted" ones (those were never sent);
the *window* turns are issued turns with `in_window`; latency distributions, throughput and
per-user speed use the window turns that succeeded, and failures are counted apart, never mixed
into a distribution. Timings stay in nanoseconds in the summary (the reference's unit) and are
shown in ms in the report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from .records import Record

#: SPEC §8.5, highest first.
PERCENTILES = (99.9, 99, 97, 95, 90, 80, 75, 50, 25, 10, 5, 1)


def pct_key(p: float) -> str:
    return f"{p:g}"


def distribution(values: Sequence[float]) -> dict[str, Any]:
    """n, total, min, max, avg, std_dev (sample, ddof=1) and percentiles taking an observed value
    (numpy `method="lower"`). Empty input gives n=0 and nulls, so a summary always has the keys."""
    if not values:
        return {"n": 0, "total": 0, "min": None, "max": None, "avg": None, "std_dev": None, "percentiles": {pct_key(p): None for p in PERCENTILES}}
    a = np.asarray(values, dtype=np.float64)
    pv = np.percentile(a, PERCENTILES, method="lower")
    return {
        "n": int(a.size),
        "total": float(a.sum()),
        "min": float(a.min()),
        "max": float(a.max()),
        "avg": float(a.mean()),
        "std_dev": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        "percentiles": {pct_key(p): float(v) for p, v in zip(PERCENTILES, pv)},
    }


@dataclass(frozen=True)
class Window:
    start_ns: int | None  # send time of the run's first request
    close_ns: int | None  # first slot that finished a trajectory and found the FIFO empty
    end_ns: int | None  # last completion of the window turns


def issued(records: Iterable[Record]) -> list[Record]:
    return [r for r in records if r.error_kind != "aborted"]


def window_of(records: Sequence[Record], close_ns: int | None) -> Window:
    sent = issued(records)
    start = min((r.t_send_ns for r in sent), default=None)
    ends = [r.t_last_ns for r in sent if r.in_window and r.ok and r.t_last_ns is not None]
    return Window(start, close_ns, max(ends) if ends else None)


def _sum_known(values: Iterable[int | None]) -> int:
    return sum(v for v in values if v is not None)


def compute(records: Sequence[Record], *, window_close_ns: int | None = None) -> dict[str, Any]:
    """Every metric of SPEC §8 over a run's records, as one JSON-ready dict."""
    sent = issued(records)
    window_turns = [r for r in sent if r.in_window]
    good = [r for r in window_turns if r.ok]
    win = window_of(records, window_close_ns)
    duration_ns = (win.end_ns - win.start_ns) if win.start_ns is not None and win.end_ns is not None else 0
    duration_s = duration_ns / 1e9

    out_tokens = [r.output_tokens() for r in good]
    total_out = _sum_known(out_tokens)
    e2e_ns = [r.t_last_ns - r.t_send_ns for r in good if r.t_last_ns is not None]
    e2e_s_sum = sum(e2e_ns) / 1e9
    ttft_ns = [r.t_first_ns - r.t_send_ns for r in good if r.t_first_ns is not None]
    tpot_ns: list[float] = []
    for r in good:
        n = r.output_tokens()
        if r.t_first_ns is not None and r.t_last_ns is not None and n is not None and n >= 2:
            tpot_ns.append((r.t_last_ns - r.t_first_ns) / (n - 1))
    itl_ns = [b - a for r in good for a, b in zip(r.chunk_ns, r.chunk_ns[1:])]

    errors = Counter(r.error_kind for r in records if r.error_kind is not None)
    return {
        "n_samples_issued": len(sent),
        "n_samples_completed": sum(1 for r in sent if r.ok),
        "n_samples_failed": sum(1 for r in sent if not r.ok),
        "n_samples_aborted": errors.get("aborted", 0),
        "n_window_samples": len(window_turns),
        "n_window_completed": len(good),
        "n_window_failed": len(window_turns) - len(good),
        "duration_ns": duration_ns,
        "window": {"start_ns": win.start_ns, "close_ns": win.close_ns, "end_ns": win.end_ns, "closed": win.close_ns is not None},
        "ttft": distribution(ttft_ns),
        "tpot": distribution(tpot_ns),
        "latency": distribution(e2e_ns),
        "itl": distribution(itl_ns),
        "input_sequence_lengths": distribution([v for v in (_input_tokens(r) for r in good) if v is not None]),
        "output_sequence_lengths": distribution([v for v in out_tokens if v is not None]),
        "qps": len(good) / duration_s if duration_s > 0 else 0.0,
        "tps": total_out / duration_s if duration_s > 0 else 0.0,
        "interactivity": {
            "e2e_interactivity": total_out / e2e_s_sum if e2e_s_sum > 0 else 0.0,
            "output_tokens_sum": total_out,
            "e2e_seconds_sum": e2e_s_sum,
            "per_trajectory": distribution(per_trajectory_speed(good)),
            "per_turn": distribution(
                [n / ((r.t_last_ns - r.t_send_ns) / 1e9) for r in good if (n := r.output_tokens()) is not None and r.t_last_ns is not None and r.t_last_ns > r.t_send_ns]
            ),
        },
        "tokens": token_sources(good),
        "cached_tokens": cached(good),
        "per_trajectory": per_trajectory_stats(sent),
        "finish_reason_counts": dict(sorted(Counter(r.finish_reason or "none" for r in good).items())),
        "errors_by_kind": dict(sorted(errors.items())),
        "all_turns": {
            "output_tokens": _sum_known(r.output_tokens() for r in sent if r.ok),
            "completed": sum(1 for r in sent if r.ok),
            "out_of_window": len(sent) - len(window_turns),
        },
    }


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


def token_sources(good: Sequence[Record]) -> dict[str, Any]:
    """Where the token counts came from, and the client − server difference where both exist."""
    out_both = [(r.client_output_tokens, r.completion_tokens) for r in good if r.client_output_tokens is not None and r.completion_tokens is not None]
    in_both = [(r.client_prompt_tokens, r.prompt_tokens) for r in good if r.client_prompt_tokens is not None and r.prompt_tokens is not None]
    return {
        "output_from_server": sum(1 for r in good if r.completion_tokens is not None),
        "output_from_client": sum(1 for r in good if r.completion_tokens is None and r.client_output_tokens is not None),
        "output_unknown": sum(1 for r in good if r.output_tokens() is None),
        "output_client_minus_server": distribution([c - s for c, s in out_both]),
        "input_from_server": sum(1 for r in good if r.prompt_tokens is not None),
        "input_client_minus_server": distribution([c - s for c, s in in_both]),
    }


def cached(good: Sequence[Record]) -> dict[str, Any]:
    """Measured prefix-cache hits (SPEC §8.4): cached / prompt tokens over turns reporting both."""
    pairs = [(r.cached_tokens, r.prompt_tokens) for r in good if r.cached_tokens is not None and r.prompt_tokens]
    c = sum(p[0] for p in pairs)
    t = sum(p[1] for p in pairs)  # type: ignore[misc]
    return {
        "turns_reporting": len(pairs),
        "cached_tokens_sum": c,
        "prompt_tokens_sum": t,
        "hit_rate": c / t if t else None,
        "per_turn_hit_rate": distribution([a / b for a, b in pairs]),  # type: ignore[operator]
    }


def per_trajectory_stats(sent: Sequence[Record]) -> dict[str, Any]:
    """Instances started, finished cleanly, failed (a failed turn ended them), cut by the window."""
    by: dict[str, list[Record]] = defaultdict(list)
    for r in sent:
        by[r.instance_id].append(r)
    failed = sum(1 for rs in by.values() if any(not r.ok for r in rs))
    straddling = sum(1 for rs in by.values() if any(r.in_window for r in rs) and any(not r.in_window for r in rs))
    turns = [len(rs) for rs in by.values()]
    return {"instances": len(by), "failed": failed, "straddling_window_close": straddling, "turns_per_instance": distribution(turns)}
