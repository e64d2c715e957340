"""A run's result files: `performance/result_summary.json` (the reference's keys, then trajbench's
own under one key) and `report.txt` (docs/files.md), and how the run ended (`RunOutcome`:
interrupted, crashed, nothing succeeded).

`result_summary.json` loads in the reference client's own Report reader: its top-level keys in
its order, with its meanings (`replay.results.metrics.reference_metrics`). It sits where the
reference's readers look for it (`performance/result_summary.json` under the run folder, as its
plotting reader and its submission layout read it), and it is the one copy every reader of ours
reads too. Its `run_config` holds the reference's fields only (`reference_run_config`);
trajbench's own configuration is run.json. Everything trajbench adds (its turn breakdown,
per-user speed, ITL, cache hits, distributions without failures) sits under the one extra key
`trajbench`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import traces

from ..client import Connections
from ..errors import AllTurnsFailed
from .layout import REPORT_FILE, SUMMARY_FILE
from .metrics import reference_metrics, trajbench_metrics
from .numbers import ReferenceMetrics, RunNumbers
from .records import PARTIAL_KINDS, Record, read_records, records_path
from .runinfo import read_run_info
from .slo import Slo

#: The key that holds trajbench's additions in result_summary.json.
OURS = "trajbench"


@dataclass(frozen=True)
class ResultSummary(ReferenceMetrics, traces.JsonFile):
    """result_summary.json: the reference's fields in its order (its Report reader loads the
    file), then trajbench's own section under `OURS`."""

    FILE = SUMMARY_FILE
    SORT_KEYS = False  # the reference's order

    run_config: dict[str, Any]
    trajbench: RunNumbers

    def write(self, folder: str | os.PathLike[str]) -> Path:
        self.path(folder).parent.mkdir(exist_ok=True)  # performance/, as the reference lays it out
        return super().write(folder)


#: The reference's seeds: its defaults, and what its official configurations keep. trajbench's
#: schedule has no randomness (the FIFO is in file order), so they only say what the file means.
REFERENCE_SEED = 42


def reference_run_config(concurrency: int | None) -> dict[str, Any]:
    """`run_config` as the reference writes it for an agentic run: its load pattern at this
    concurrency, its warmup (off, as trajbench runs none) and its two seeds; nothing else."""
    return {
        "load_pattern": {"type": "agentic_inference", "target_qps": None, "target_concurrency": concurrency},
        "warmup": {
            "enabled": False,
            "n_requests": None,
            "salt": False,
            "drain": False,
            "warmup_random_seed": REFERENCE_SEED,
        },
        "scheduler_random_seed": REFERENCE_SEED,
        "dataloader_random_seed": REFERENCE_SEED,
    }


def build_summary(
    records: Sequence[Record],
    run: Mapping[str, Any],
    *,
    window_close_ns: int | None = None,
    interrupted: bool = False,
    crashed: bool = False,
    connections: Connections | None = None,
    slo: Slo | None = None,
    trajectory_turns: Mapping[str, int] | None = None,
) -> ResultSummary:
    """The summary of `records`; `run` is run.json's content (what of it a summary states: the
    concurrency, whether a tokenizer counted tokens, the start)."""
    tokenizer = run["tokenizer"] is not None if "tokenizer" in run else None
    ref = reference_metrics(
        records,
        window_close_ns=window_close_ns,
        started_ns=int(run.get("started_monotonic_ns") or 0),
        state="interrupted" if interrupted or crashed else "complete",
        tokenizer=tokenizer,
    )
    return ResultSummary(
        run_config=reference_run_config(run.get("concurrency")),
        trajbench=replace(
            trajbench_metrics(
                records,
                window_close_ns=window_close_ns,
                interrupted=interrupted,
                crashed=crashed,
                slo=slo,
                trajectory_turns=trajectory_turns,
                tokenizer=tokenizer,
            ),
            connections=connections,
        ),
        **vars(ref),
    )


def summarize_run(
    run_dir: str | Path,
    *,
    window_close_ns: int | None = None,
    interrupted: bool = False,
    crashed: bool = False,
    connections: Connections | None = None,
    trajectory_turns: Mapping[str, int] | None = None,
) -> ResultSummary:
    """The summary of a run folder from its records and run.json, and how the run ended (what the
    records cannot say): what `write_results` writes, and what `eval check` recomputes to compare
    with the written file (docs/compliance.md)."""
    info = read_run_info(run_dir)
    return build_summary(
        list(read_records(run_dir)),
        info.to_json(),
        slo=info.slo,
        window_close_ns=window_close_ns,
        interrupted=interrupted,
        crashed=crashed,
        connections=connections,
        trajectory_turns=trajectory_turns,
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
    summary = summarize_run(
        run_dir,
        window_close_ns=window_close_ns,
        interrupted=interrupted,
        crashed=crashed,
        connections=connections,
        trajectory_turns=trajectory_turns,
    )
    summary.write(run_dir)
    (run_dir / REPORT_FILE).write_text(render_report(summary, read_run_info(run_dir).to_json()), encoding="utf-8")
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
        """The error of a run where no turn succeeded: counts by kind and the first error."""
        first = next((r for r in read_records(run_dir) if r.error_kind not in (None, "aborted")), None)
        first_error = None if first is None else f"{first.error_kind}: {first.error_message}"
        kinds = ", ".join(
            f"{k} {v}" for k, v in sorted(self.errors_by_kind.items(), key=lambda kv: (-kv[1], kv[0])) if k != "aborted"
        )
        n = "the 1 issued turn" if self.sent == 1 else f"every one of the {self.sent} issued turns"
        if any(k in PARTIAL_KINDS for k in self.errors_by_kind):
            what = "failed or came back partial (docs/closed-loop.md)"
            measured = "no clean answer was measured"
        else:
            what, measured = "failed", "nothing was measured"
        return AllTurnsFailed(
            f"{n} {what} ({kinds}); {measured}. First error: {first_error}. "
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


def _found(cfg: Mapping[str, Any]) -> str:
    """Says so when the model name was not given but found (replay.engine.served)."""
    if cfg.get("model_source") != "served":
        return ""
    return ": the endpoint's only model, the profile's name is not served"


def render_report(s: ResultSummary, cfg: Mapping[str, Any]) -> str:
    """The human-readable digest of a summary (`cfg`: run.json's content, what the run was):
    headline, window, latencies, tokens, failures; at 80 columns (`traces.field_lines`), counts
    with thousands separators."""
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
        *_field("profile", f"{cfg.get('profile', '?')} (model {cfg.get('model', '?')}{_found(cfg)})"),
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
            f"sent {turns.sent:,}, ok {turns.ok:,}, partial {turns.partial:,}, failed {turns.failed:,}, "
            f"aborted (not sent) {turns.aborted:,}, cancelled {turns.cancelled:,}, in window {turns.window.sent:,}",
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
    if turns.partial:
        lines += _field(
            "partial",
            "the response started but was not a clean answer: "
            + ", ".join(f"{k} {v:,}" for k, v in turns.partial_by_kind.items())
            + " (completed under the reference's keys, docs/closed-loop.md)",
            label_width=label,
        )
    if turns.dropped_reasoning_chars:
        lines += _field(
            "dropped",
            f"{turns.dropped_reasoning_chars:,} characters of reasoning in {turns.dropped_reasoning_turns:,} "
            "turn(s): deltas that carried content too (the reference keeps the content, docs/metrics.md)",
            label_width=label,
        )
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
