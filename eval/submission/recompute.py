"""A point's published numbers (its manifest headline) recomputed from its raw records, never
read from a summary, with the run's own function (`replay.build_summary`, the one `replay run`
wrote the file with). Each difference names the file, the key, the stored and the recomputed
value. (The run folder's own files are recomputed by `eval.recompute`, the compliance check's.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import replay
import traces
from replay import Record, ResultSummary, RunInfo

from ..errors import EvalError
from .manifest import Headline

#: Numbers written to JSON and read back agree to the last bit; this only absorbs a float
#: printed by another writer with fewer digits.
REL_TOL = 1e-9


@dataclass(frozen=True)
class Difference:
    file: str
    key: str
    stored: Any
    recomputed: Any

    def text(self) -> str:
        return f"{self.file}: {self.key} is {_show(self.stored)}, recomputed {_show(self.recomputed)}"


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        text = traces.canonical_json(v)
        return text if len(text) <= 60 else text[:57] + "…"
    return repr(v) if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class Recomputed:
    """A run folder's records and run.json, and the summary they make."""

    info: RunInfo
    records: list[Record]
    summary: ResultSummary


def recompute(run_dir: Path) -> Recomputed:
    """The summary of `run_dir`'s records; a records file or run.json that cannot be read raises
    EvalError naming it."""
    try:
        info = replay.read_run_info(run_dir)
        records = list(replay.read_records(run_dir))
    except replay.ReplayError as exc:
        raise EvalError(str(exc)) from None
    summary = replay.build_summary(records, info.to_json(), slo=info.slo)
    return Recomputed(info, records, summary)


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=REL_TOL)
    return bool(a == b)


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def headline(fresh: Recomputed, inline_score: float | None, osl_mean: float | None) -> Headline:
    """The numbers a submission publishes for a point, from its recomputed summary."""
    s = fresh.summary
    ours = s.trajbench
    window = ours.turns.window
    return Headline(
        concurrency=fresh.info.concurrency,
        output_tokens_per_s=ours.throughput.output_tokens_per_s,
        per_user_tokens_per_s=ours.interactivity.e2e_interactivity,
        requests_per_s=ours.throughput.requests_per_s,
        window_turns=window.sent + window.aborted,
        window_not_ok=window.sent + window.aborted - window.ok,
        ttft_p50_ms=_ms(ours.ttft.p(50)),
        ttft_p90_ms=_ms(ours.ttft.p(90)),
        ttft_p99_ms=_ms(ours.ttft.p(99)),
        tpot_p50_ms=_ms(ours.tpot.p(50)),
        tpot_p90_ms=_ms(ours.tpot.p(90)),
        n_samples_issued=s.n_samples_issued,
        n_samples_completed=s.n_samples_completed,
        n_samples_failed=s.n_samples_failed,
        duration_ns=s.duration_ns,
        qps=s.qps,
        tps=s.tps,
        inline_score=inline_score,
        osl_mean=osl_mean,
    )


def headline_differences(stored: Headline, fresh: Headline, file: str, where: str) -> list[Difference]:
    """The headline numbers of `stored` (at `where` in `file`) that differ from `fresh`."""
    return [
        Difference(file, f"{where}.{f.name}", getattr(stored, f.name), getattr(fresh, f.name))
        for f in fields(Headline)
        if not _close(getattr(stored, f.name), getattr(fresh, f.name))
    ]


def null_keys(fresh: ResultSummary) -> frozenset[str]:
    """The dotted keys of the reference's metrics that are null in the recomputation: an
    early-stopping bound the run has too few samples for (the reference writes null there too)."""
    out = set()
    data = fresh.to_json()
    for metric in ("ttft", "tpot", "latency"):
        block = data.get(metric) or {}
        for p, v in (block.get("early_stopping_percentiles") or {}).items():
            if v is None:
                out.add(f"{metric}.early_stopping_percentiles.{p}")
    return frozenset(out)
