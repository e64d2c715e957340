"""A run's result files: `result_summary.json` (the reference's keys plus ours) and `report.txt`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .metrics import compute, pct_key
from .records import Record, read_records, read_run_config

SUMMARY_FILE = "result_summary.json"
REPORT_FILE = "report.txt"


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended, as its result_summary.json says: `finished` when the file exists (it is
    written last, also after Ctrl-C or a crash), with `interrupted` / `crashed` when the run was
    cut short. A sweep resumes from it and `eval` warns about partial runs with it."""

    finished: bool
    interrupted: bool = False
    crashed: bool = False

    @property
    def complete(self) -> bool:
        return self.finished and not self.interrupted and not self.crashed

    @classmethod
    def read(cls, run_dir: str | Path) -> RunOutcome:
        try:
            summary = json.loads((Path(run_dir) / SUMMARY_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            return cls(finished=False)  # missing, or cut off while being written
        if not isinstance(summary, dict):
            return cls(finished=False)
        return cls(True, bool(summary.get("interrupted")), bool(summary.get("crashed")))


def build_summary(records: Sequence[Record], run_config: dict[str, Any], *, window_close_ns: int | None = None) -> dict[str, Any]:
    summary = compute(records, window_close_ns=window_close_ns)
    summary["run_config"] = run_config
    return summary


def write_results(run_dir: str | Path, *, window_close_ns: int | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read the run's records and config, write both result files, return the summary."""
    run_dir = Path(run_dir)
    summary = build_summary(list(read_records(run_dir)), read_run_config(run_dir), window_close_ns=window_close_ns)
    if extra:
        summary.update(extra)
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    (run_dir / REPORT_FILE).write_text(render_report(summary), encoding="utf-8")
    return summary


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:.1f}"


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


_SHOWN = (99, 95, 90, 50, 10)


def _dist_row(name: str, d: dict[str, Any], conv) -> str:  # type: ignore[no-untyped-def]
    cells = [conv(d["avg"]), conv(d["min"])] + [conv(d["percentiles"][pct_key(p)]) for p in _SHOWN] + [conv(d["max"])]
    return f"  {name:<22}{d['n']:>8}  " + "".join(f"{c:>10}" for c in cells)


def render_report(s: dict[str, Any]) -> str:
    """The human-readable digest of a summary: headline, window, latencies, tokens, failures."""
    cfg = s.get("run_config", {})
    inter = s["interactivity"]
    w = s["window"]
    lines = [
        "trajbench replay report",
        "=======================",
        f"target      {cfg.get('target', '?')}  {cfg.get('endpoint', '')}",
        f"profile     {cfg.get('profile', '?')} (model {cfg.get('model', '?')})",
        f"load        concurrency {cfg.get('concurrency')}  trajectories {cfg.get('num_trajectories')}  "
        f"workers {cfg.get('workers')}  delays {'on' if cfg.get('inject_delays') else 'off'}  "
        f"stop at window end {'yes' if cfg.get('stop_at_window_end') else 'no'}",
        "",
        "headline (turns issued in the performance window)",
        f"  system throughput     {s['tps']:.1f} output tok/s   ({s['qps']:.2f} requests/s)",
        f"  per-user speed        {inter['e2e_interactivity']:.1f} tok/s pooled = {inter['output_tokens_sum']} tokens / {inter['e2e_seconds_sum']:.2f} s of E2E",
        f"  per-trajectory speed  median {_num(inter['per_trajectory']['percentiles']['50'])} tok/s over {inter['per_trajectory']['n']} instances",
        f"  window                {s['duration_ns'] / 1e9:.2f} s, {'closed' if w['closed'] else 'never closed (the FIFO outlasted every slot)'}",
        "",
        f"turns       issued {s['n_samples_issued']}  completed {s['n_samples_completed']}  failed {s['n_samples_failed']}  "
        f"aborted (not sent) {s['n_samples_aborted']}  in window {s['n_window_samples']}",
        "",
        f"  {'metric':<22}{'n':>8}  " + "".join(f"{h:>10}" for h in ["avg", "min"] + [f"p{p}" for p in _SHOWN] + ["max"]),
        _dist_row("TTFT ms", s["ttft"], _ms),
        _dist_row("TPOT ms", s["tpot"], _ms),
        _dist_row("ITL ms", s["itl"], _ms),
        _dist_row("E2E ms", s["latency"], _ms),
        _dist_row("input tokens", s["input_sequence_lengths"], _num),
        _dist_row("output tokens", s["output_sequence_lengths"], _num),
        _dist_row("per-turn tok/s", inter["per_turn"], _num),
        "",
    ]
    c = s["cached_tokens"]
    if c["turns_reporting"]:
        lines.append(f"prefix cache  {c['cached_tokens_sum']} of {c['prompt_tokens_sum']} prompt tokens cached ({100 * c['hit_rate']:.1f} %)")
    t = s["tokens"]
    lines.append(f"token counts  output from server usage {t['output_from_server']}, from client tokenizer {t['output_from_client']}, unknown {t['output_unknown']}")
    if t["output_client_minus_server"]["n"]:
        lines.append(f"              client − server output tokens: mean {t['output_client_minus_server']['avg']:.2f}")
    lines.append(f"finish        {', '.join(f'{k} {v}' for k, v in s['finish_reason_counts'].items()) or '-'}")
    if s["errors_by_kind"]:
        lines.append(f"errors        {', '.join(f'{k} {v}' for k, v in s['errors_by_kind'].items())}")
    if s.get("interrupted"):
        lines.append("NOTE          the run was interrupted (Ctrl-C); the numbers cover what finished")
    return "\n".join(lines) + "\n"

