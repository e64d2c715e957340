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
    return "-" if v is None else f"{v / 1e6:.1f}"


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


_SHOWN = (99, 95, 90, 50, 10)


def _dist_row(name: str, d: traces.Distribution, conv: Callable[[float | None], str]) -> str:
    cells = [conv(d.avg), conv(d.min)] + [conv(d.p(p)) for p in _SHOWN] + [conv(d.max)]
    return f"  {name:<22}{d.n:>8}  " + "".join(f"{c:>10}" for c in cells)


def _goodput_lines(t: RunNumbers) -> list[str]:
    g = t.goodput
    if g is None:
        return []
    limits = ", ".join(
        f"{name} {_num(v, 'g')} {unit}"
        for name, v, unit in (("TTFT", g.ttft_ms, "ms"), ("TPOT", g.tpot_ms, "ms"), ("session", g.session_s, "s"))
        if v is not None
    )
    return [
        f"  goodput (SLO {limits})",
        f"    of turns            {g.output_tokens_per_s:.1f} output tok/s   ({g.turns_met} of {g.turns} turns met the SLO)",
        f"    of sessions         {g.session_output_tokens_per_s:.1f} output tok/s   ({g.sessions_met} of {g.sessions} sessions met it"
        + (f"; {g.sessions_incomplete} cut off by the run's end, not judged)" if g.sessions_incomplete else ")"),
    ]


def _found(cfg: dict[str, Any]) -> str:
    """Says so when the model name was not given but found (replay.engine.served)."""
    if cfg.get("model_source") != "served":
        return ""
    return ": the endpoint's only model, the profile's name is not served"


def render_report(s: ResultSummary) -> str:
    """The human-readable digest of a summary: headline, window, latencies, tokens, failures."""
    cfg = s.run_config
    t = s.trajbench
    inter = t.interactivity
    w = t.window
    turns = t.turns
    lines = [
        "trajbench replay report",
        "=======================",
        f"target      {cfg.get('target', '?')}  {cfg.get('endpoint', '')}",
        f"profile     {cfg.get('profile', '?')} (model {cfg.get('model', '?')}{_found(cfg)})",
        f"load        concurrency {cfg.get('concurrency')}  trajectories {cfg.get('num_trajectories')}  "
        f"workers {cfg.get('workers')}  delays {'on' if cfg.get('inject_delays') else 'off'}  "
        f"stop at window end {'yes' if cfg.get('stop_at_window_end') else 'no'}",
        "",
        "headline (turns issued in the performance window that succeeded)",
        f"  system throughput     {t.throughput.output_tokens_per_s:.1f} output tok/s   ({t.throughput.requests_per_s:.2f} requests/s)",
        f"  per-user speed        {inter.e2e_interactivity:.1f} tok/s pooled = {inter.output_tokens_sum} tokens / {inter.e2e_seconds_sum:.2f} s of E2E",
        f"  per-trajectory speed  median {_num(inter.per_trajectory.p(50))} tok/s over {inter.per_trajectory.n} instances",
        f"  window                {w.duration_ns / 1e9:.2f} s, {'closed' if w.closed else 'never closed (the FIFO outlasted every slot)'}",
        *_goodput_lines(t),
        "",
        f"turns       sent {turns.sent}  ok {turns.ok}  failed {turns.failed}  aborted (not sent) {turns.aborted}  "
        f"cancelled {turns.cancelled}  in window {turns.window.sent}",
        f"reference   issued {s.n_samples_issued}  completed {s.n_samples_completed}  failed {s.n_samples_failed}  "
        f"(tracked turns, as the reference counts them)",
        "",
        f"  {'metric':<22}{'n':>8}  "
        + "".join(f"{h:>10}" for h in ["avg", "min"] + [f"p{p}" for p in _SHOWN] + ["max"]),
        _dist_row("TTFT ms", t.ttft, _ms),
        _dist_row("TPOT ms", t.tpot, _ms),
        _dist_row("ITL ms", t.itl, _ms),
        _dist_row("E2E ms", t.latency, _ms),
        _dist_row("input tokens", t.input_sequence_lengths, _num),
        _dist_row("output tokens", t.output_sequence_lengths, _num),
        _dist_row("per-turn tok/s", inter.per_turn, _num),
        "",
    ]
    if t.tpot_denominator:
        how = ", ".join(f"{k} {v}" for k, v in t.tpot_denominator.items())
        lines.append(f"TPOT          tokens after the first chunk counted by: {how}")
    c = t.cached_tokens
    if c.turns_reporting and c.hit_rate is not None:
        lines.append(
            f"prefix cache  {c.cached_tokens_sum} of {c.prompt_tokens_sum} prompt tokens cached ({100 * c.hit_rate:.1f} %)"
        )
    tok = t.tokens
    lines.append(
        f"token counts  output from server usage {tok.output_from_server}, from client tokenizer {tok.output_from_client}, unknown {tok.output_unknown}"
    )
    if tok.output_client_minus_server.n and tok.output_client_minus_server.avg is not None:
        lines.append(f"              client − server output tokens: mean {tok.output_client_minus_server.avg:.2f}")
    lines.append(f"finish        {', '.join(f'{k} {v}' for k, v in t.finish_reasons.items()) or '-'}")
    if t.errors_by_kind:
        lines.append(f"errors        {', '.join(f'{k} {v}' for k, v in t.errors_by_kind.items())}")
    if (k := t.connections) is not None:
        reuse = "kept alive" if k.kept_alive else "one per request (the server closes them)"
        lines.append(
            f"connections   {k.prewarmed} opened before the first request, {k.opened_in_run} during the run, "
            f"{k.reconnects} reconnects, {k.expired} expired idle, {k.prewarm_failed} failed to pre-open; {reuse}"
        )
    if t.interrupted:
        lines.append("NOTE          the run was interrupted (Ctrl-C); the numbers cover what finished")
    return "\n".join(lines) + "\n"
