"""The OSL gate (SPEC §9.1): mean output tokens per turn against the model profile's band.

A turn's output tokens are the server's `usage.completion_tokens`, else the client tokenizer's
count (SPEC §8.4, `Record.output_tokens`). Failed turns have no complete output and are left
out (they are counted, not averaged). The mean is reported for the performance-window turns and
for all turns; the gate is decided on the window, the turns that make the Pareto point, and the
all-turns mean is shown beside it. The dataset's own expected mean over the same turns (from
the shards' `expected_osl_tokens`, when they were built with a tokenizer) is the reference a
reader compares against. Writes `osl.json` into the run folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import traces
from replay.records import Record

from .rundir import GroundTruth, Run, open_run

OSL_FILE = "osl.json"


def osl_gate(run_dir: str | Path, *, profile: str | None = None, shards: str | Path | None = None, write: bool = True) -> dict[str, Any]:
    """OSL statistics of a run and the verdict against `profile` (default: the run's)."""
    run = open_run(run_dir, shards)
    result = osl_of(run, profile)
    if write:
        (run.path / OSL_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def osl_of(run: Run, profile: str | None = None) -> dict[str, Any]:
    name = profile or run.profile_name or "kimi-k3"
    prof = traces.get_profile(name)
    lo, hi = prof.thresholds.osl_min, prof.thresholds.osl_max
    records = run.records()
    gt = run.truth()
    window = _population([r for r in records if r.in_window], gt, lo, hi)
    whole = _population(records, gt, lo, hi)
    if lo is None or hi is None:
        passed, reason = None, f"profile {name} has no official OSL band"
    elif window["turns"] and window["failed"] == window["turns"]:
        passed, reason = False, f"every one of the {window['turns']} window turns failed: there is no output to measure; see the run's errors"
    elif window["mean"] is None:
        passed, reason = False, (
            "no output token counts in the window: the server sent no usage and the run had no client "
            "tokenizer; rerun with --tokenizer"
        )
    else:
        passed = window["in_band"]
        reason = _verdict(window["mean"], lo, hi)
    return {
        "profile": name,
        "band": {"min": lo, "max": hi},
        "passed": passed,
        "reason": reason,
        "window": window,
        "all": whole,
    }


def _population(records: list[Record], gt: GroundTruth, lo: float | None, hi: float | None) -> dict[str, Any]:
    ok = [r for r in records if r.ok]
    counts = [n for n in (r.output_tokens() for r in ok) if n is not None]
    both = [(r.client_output_tokens - r.completion_tokens) for r in ok if r.completion_tokens is not None and r.client_output_tokens is not None]
    expected = [
        t.expected_osl_tokens
        for t in (gt.truths.get((r.trajectory_id, r.turn)) for r in ok)
        if t is not None and t.expected_osl_tokens is not None
    ]
    mean = sum(counts) / len(counts) if counts else None
    out: dict[str, Any] = {
        "turns": len(records),
        "failed": len(records) - len(ok),
        "counted": len(counts),
        "uncounted": len(ok) - len(counts),
        "server_counted": sum(1 for r in ok if r.completion_tokens is not None),
        "client_counted": sum(1 for r in ok if r.completion_tokens is None and r.client_output_tokens is not None),
        "mean": None if mean is None else round(mean, 2),
        "expected_mean": round(sum(expected) / len(expected), 2) if expected else None,
        "client_minus_server_mean": round(sum(both) / len(both), 2) if both else None,
        "in_band": None,
        "outside_by": None,
    }
    if mean is not None and lo is not None and hi is not None:
        out["in_band"] = lo <= mean <= hi
        out["outside_by"] = round(mean - hi, 2) if mean > hi else round(mean - lo, 2) if mean < lo else 0.0
    return out


def _verdict(mean: float, lo: float, hi: float) -> str:
    if mean < lo:
        return f"window mean {mean:.2f} is {lo - mean:.2f} tokens below the band {lo:g}-{hi:g}"
    if mean > hi:
        return f"window mean {mean:.2f} is {mean - hi:.2f} tokens above the band {lo:g}-{hi:g}"
    return f"window mean {mean:.2f} is inside the band {lo:g}-{hi:g} ({mean - lo:.2f} above min, {hi - mean:.2f} below max)"


def summary_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for label in ("window", "all"):
        p = result[label]
        exp = "" if p["expected_mean"] is None else f", dataset expects {p['expected_mean']:.2f}"
        mean = "n/a" if p["mean"] is None else f"{p['mean']:.2f}"
        band = "" if p["in_band"] is None else (" (in band)" if p["in_band"] else f" (outside by {p['outside_by']:+.2f})")
        lines.append(
            f"{label:>6}: mean {mean} tokens/turn over {p['counted']} turns{band}{exp}; "
            f"{p['failed']} failed, {p['uncounted']} uncounted"
        )
    verdict = {True: "PASS", False: "FAIL", None: "n/a"}[result["passed"]]
    lines.append(f"{verdict}: {result['reason']}")
    return lines
