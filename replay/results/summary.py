"""A run's result files: `result_summary.json` (the reference's keys, then trajbench's own under
one key) and `report.txt` (docs/files.md), and how the run ended (`RunOutcome`: interrupted, crashed,
nothing succeeded).

`result_summary.json` loads in the reference client's own Report reader: its top-level keys in
its order, with its meanings (`replay.results.metrics.reference_metrics`). Everything trajbench adds
(its turn breakdown, per-user speed, ITL, cache hits, distributions without failures) sits under
the one extra key `trajbench`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import traces

from ..client import Connections
from ..errors import AllTurnsFailed
from .layout import REPORT_FILE, SUMMARY_FILE
from .metrics import reference_metrics, trajbench_metrics
from .numbers import Metric, RunNumbers
from .records import Record, read_records, records_path
from .runinfo import read_run_info
from .slo import Slo

#: The key that holds trajbench's additions in result_summary.json.
OURS = "trajbench"


@dataclass(frozen=True)
class ResultSummary(traces.JsonFile):
    """result_summary.json: the reference's fields in its order (its Report reader loads the
    file), then trajbench's own section under `OURS`."""

    FILE = SUMMARY_FILE
    SORT_KEYS = False  # the reference's order

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
    run_config: dict[str, Any]
    trajbench: RunNumbers


def build_summary(
    records: Sequence[Record],
    run_config: dict[str, Any],
    *,
    window_close_ns: int | None = None,
    interrupted: bool = False,
    crashed: bool = False,
    connections: Connections | None = None,
    slo: Slo | None = None,
    trajectory_turns: Mapping[str, int] | None = None,
) -> ResultSummary:
    ref = reference_metrics(records, window_close_ns=window_close_ns)
    state = "interrupted" if interrupted or crashed else "complete"
    return ResultSummary(
        version=traces.__version__,
        git_sha=None,
        test_started_at=int(run_config.get("started_monotonic_ns") or 0),
        state=state,
        complete=state == "complete",
        run_config=run_config,
        trajbench=replace(
            trajbench_metrics(
                records,
                window_close_ns=window_close_ns,
                interrupted=interrupted,
                crashed=crashed,
                slo=slo,
                trajectory_turns=trajectory_turns,
            ),
            connections=connections,
        ),
        **vars(ref),
    )


def write_results(
    run_dir: str | Path,
    *,
    window_close_ns: int | None = None,
    interrupted: bool = False,
    crashed: bool = False,
    connections: Connections | None = None,
    trajectory_turns: Mapping[str, int] | None = None,
) -> ResultSummary:
    """Read the run's records and run.json, write both result files, return the summary
    (`trajectory_turns`: each trajectory's client turns, so goodput judges ended sessions only)."""
    run_dir = Path(run_dir)
    info = read_run_info(run_dir)
    run = info.to_json()
    summary = build_summary(
        list(read_records(run_dir)),
        run,
        slo=info.slo,
        window_close_ns=window_close_ns,
        interrupted=interrupted,
        crashed=crashed,
        connections=connections,
        trajectory_turns=trajectory_turns,
    )
    summary.write(run_dir)
    (run_dir / REPORT_FILE).write_text(render_report(summary), encoding="utf-8")
    return summary


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended, from its result_summary.json, which is written last (also after Ctrl-C or
    a crash): `finished` when the file is there, `interrupted` / `crashed` when the run was cut
    short, and whether any sent turn succeeded. A sweep resumes from it, `replay run` picks its
    exit code with it and `eval` warns about partial runs with it."""

    finished: bool
    interrupted: bool = False
    crashed: bool = False
    sent: int = 0
    ok: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.finished and not self.interrupted and not self.crashed

    @property
    def all_failed(self) -> bool:
        """Turns sent, none of them answered, and not because of a Ctrl-C: the endpoint broke,
        nothing was measured."""
        return self.finished and self.sent > 0 and self.ok == 0 and not self.interrupted

    @classmethod
    def read(cls, run_dir: str | Path) -> RunOutcome:
        try:
            ours = ResultSummary.read(run_dir).trajbench
        except traces.ContractError:
            return cls(finished=False)  # missing, cut off while being written, or not ours
        return cls(True, ours.interrupted, ours.crashed, ours.turns.sent, ours.turns.ok, dict(ours.errors_by_kind))

    def failure(self, run_dir: str | Path) -> AllTurnsFailed:
        """The error of a run where every turn failed: counts by kind and the first error."""
        first = next((r for r in read_records(run_dir) if r.error_kind not in (None, "aborted")), None)
        first_error = None if first is None else f"{first.error_kind}: {first.error_message}"
        kinds = ", ".join(
            f"{k} {v}" for k, v in sorted(self.errors_by_kind.items(), key=lambda kv: (-kv[1], kv[0])) if k != "aborted"
        )
        n = "the 1 issued turn" if self.sent == 1 else f"every one of the {self.sent} issued turns"
        return AllTurnsFailed(
            f"{n} failed ({kinds}); nothing was measured. First error: {first_error}. "
            f"Fix the endpoint and rerun; every turn is in {records_path(run_dir)}"
        )


def _ms(v: float | None) -> str:
    return traces.format_number(None if v is None else v / 1e6)


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


#: The percentiles report.txt shows beside avg, min and max; result_summary.json has them all.
_SHOWN = (50, 90, 95, 99)
#: The table's columns: a 16-character label (indent included), n in 8, each value in 8: 80 columns.
_LABEL, _N, _CELL = 16, 8, 8


def _count(n: int) -> str:
    """n in 7 characters: exact up to 999,999, then in millions (result_summary.json is exact)."""
    return traces.format_count(n) if n < 1_000_000 else f"{n / 1e6:.1f}M"


def _dist_header() -> str:
    heads = ["avg", "min"] + [f"p{p}" for p in _SHOWN] + ["max"]
    return f"{'  metric':<{_LABEL}}{'n':>{_N}}" + "".join(f"{h:>{_CELL}}" for h in heads)


def _dist_row(name: str, d: traces.Distribution, conv: Callable[[float | None], str]) -> str:
    cells = [conv(d.avg), conv(d.min)] + [conv(d.p(p)) for p in _SHOWN] + [conv(d.max)]
    return f"{'  ' + name:<{_LABEL}}{_count(d.n):>{_N}}" + "".join(f"{c:>{_CELL}}" for c in cells)


def _field(label: str, value: str, indent: int = 0, label_width: int = 10) -> list[str]:
    return traces.field_lines(label, value, label_width=label_width, indent=indent)


def _goodput_lines(t: RunNumbers) -> list[str]:
    g = t.goodput
    if g is None:
        return []
    limits = ", ".join(
        f"{name} {_num(v, 'g')} {unit}"
        for name, v, unit in (("TTFT", g.ttft_ms, "ms"), ("TPOT", g.tpot_ms, "ms"), ("session", g.session_s, "s"))
        if v is not None
    )
    sessions = f"{g.sessions_met:,} of {g.sessions:,} sessions met it" + (
        f"; {g.sessions_incomplete:,} cut off by the run's end, not judged" if g.sessions_incomplete else ""
    )
    return [
        f"  goodput (SLO {limits})",
        *_field(
            "of turns",
            f"{traces.format_number(g.output_tokens_per_s, 12)} output tok/s "
            f"({g.turns_met:,} of {g.turns:,} turns met the SLO)",
            indent=4,
            label_width=18,
        ),
        *_field(
            "of sessions",
            f"{traces.format_number(g.session_output_tokens_per_s, 12)} output tok/s ({sessions})",
            indent=4,
            label_width=18,
        ),
    ]


def render_report(s: ResultSummary) -> str:
    """The human-readable digest of a summary: headline, window, latencies, tokens, failures; at
    80 columns (`traces.field_lines`), counts with thousands separators."""
    cfg = s.run_config
    t = s.trajbench
    inter = t.interactivity
    w = t.window
    turns = t.turns

    def big(v: float | None) -> str:
        return traces.format_number(v, 12)

    lines = [
        "trajbench replay report",
        "=======================",
        *_field("target", f"{cfg.get('target', '?')}  {cfg.get('endpoint', '')}"),
        *_field("profile", f"{cfg.get('profile', '?')} (model {cfg.get('model', '?')})"),
        *_field(
            "load",
            f"concurrency {cfg.get('concurrency')}, trajectories {cfg.get('num_trajectories')}, "
            f"workers {cfg.get('workers')}, delays {'on' if cfg.get('inject_delays') else 'off'}, "
            f"stop at window end {'yes' if cfg.get('stop_at_window_end') else 'no'}",
        ),
        "",
        "headline (turns issued in the performance window that succeeded)",
        *_field(
            "system throughput",
            f"{big(t.throughput.output_tokens_per_s)} output tok/s ({t.throughput.requests_per_s:,.2f} requests/s)",
            indent=2,
            label_width=20,
        ),
        *_field(
            "per-user speed",
            f"{big(inter.e2e_interactivity)} tok/s pooled = {inter.output_tokens_sum:,} tokens / "
            f"{inter.e2e_seconds_sum:,.2f} s of E2E",
            indent=2,
            label_width=20,
        ),
        *_field(
            "per-trajectory speed",
            f"median {big(inter.per_trajectory.p(50))} tok/s over {inter.per_trajectory.n:,} instances",
            indent=2,
            label_width=20,
        ),
        *_field(
            "window",
            f"{w.duration_ns / 1e9:,.2f} s, {'closed' if w.closed else 'never closed (the FIFO outlasted every slot)'}",
            indent=2,
            label_width=20,
        ),
        *_goodput_lines(t),
        "",
        *_field(
            "turns",
            f"sent {turns.sent:,}, ok {turns.ok:,}, failed {turns.failed:,}, aborted (not sent) {turns.aborted:,}, "
            f"cancelled {turns.cancelled:,}, in window {turns.window.sent:,}",
        ),
        *_field(
            "reference",
            f"issued {s.n_samples_issued:,}, completed {s.n_samples_completed:,}, failed {s.n_samples_failed:,} "
            "(tracked turns, as the reference counts them)",
        ),
        "",
        _dist_header(),
        _dist_row("TTFT ms", t.ttft, _ms),
        _dist_row("TPOT ms", t.tpot, _ms),
        _dist_row("ITL ms", t.itl, _ms),
        _dist_row("E2E ms", t.latency, _ms),
        _dist_row("input tokens", t.input_sequence_lengths, traces.format_number),
        _dist_row("output tokens", t.output_sequence_lengths, traces.format_number),
        _dist_row("per-turn tok/s", inter.per_turn, traces.format_number),
        "",
    ]
    label = 12
    if t.tpot_denominator:
        how = ", ".join(f"{k} {v:,}" for k, v in t.tpot_denominator.items())
        lines += _field("TPOT", f"tokens after the first chunk counted by: {how}", label_width=label)
    c = t.cached_tokens
    if c.turns_reporting and c.hit_rate is not None:
        lines += _field(
            "prefix cache",
            f"{c.cached_tokens_sum:,} of {c.prompt_tokens_sum:,} prompt tokens cached ({100 * c.hit_rate:.1f} %)",
            label_width=label,
        )
    tok = t.tokens
    lines += _field(
        "token counts",
        f"output from server usage {tok.output_from_server:,}, from client tokenizer {tok.output_from_client:,}, "
        f"unknown {tok.output_unknown:,}",
        label_width=label,
    )
    if tok.output_client_minus_server.n and tok.output_client_minus_server.avg is not None:
        lines += _field(
            "", f"client − server output tokens: mean {tok.output_client_minus_server.avg:.2f}", label_width=label
        )
    lines += _field("finish", ", ".join(f"{k} {v:,}" for k, v in t.finish_reasons.items()) or "-", label_width=label)
    if t.errors_by_kind:
        lines += _field("errors", ", ".join(f"{k} {v:,}" for k, v in t.errors_by_kind.items()), label_width=label)
    if (k := t.connections) is not None:
        reuse = "kept alive" if k.kept_alive else "one per request (the server closes them)"
        lines += _field(
            "connections",
            f"{k.prewarmed:,} opened before the first request, {k.opened_in_run:,} during the run, "
            f"{k.reconnects:,} reconnects, {k.expired:,} expired idle, {k.prewarm_failed:,} failed to pre-open; "
            f"{reuse}",
            label_width=label,
        )
    if t.interrupted:
        lines += _field("NOTE", "the run was interrupted (Ctrl-C); the numbers cover what finished", label_width=label)
    return "\n".join(lines) + "\n"
