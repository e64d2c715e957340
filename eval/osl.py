"""The OSL gate: mean output tokens per turn against the model profile's band (docs/accuracy.md).

Output tokens are counted two ways, and both are recorded:

- as the reference client counts them: the model's chat-template token count of each answer,
  empty answers left out (`traces.tokenizers.ChatTokenizer.output_tokens`); this needs a
  tokenizer: `--tokenizer`, else the counts the run itself recorded with one, else the profile's
  own tokenizer when it loads offline;
- from the server's `usage.completion_tokens`.

The gate uses the reference's method whenever a tokenizer is available and says which it used.
Failed turns have no output and are left out (counted, not averaged); a partial turn (the
response started but broke) is counted on what arrived, as the reference counts it. The mean is
reported for the performance-window turns and for all turns; the gate is decided on the window,
the turns that make the Pareto point. The dataset's own expected mean over the same turns (from
the shards' `expected_osl_tokens`, when they were built with a tokenizer) is the reference a
reader compares against. Writes `osl.json` into the run folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import traces
from replay import Record, amend_seal

from .errors import EvalError
from .gates import MODE_NAMES, check_mode, osl_band
from .layout import OSL_FILE
from .results import RESEARCH_NOTE, OslPopulation, OslResult
from .rundir import GroundTruth, Run, open_run

Count = Callable[[Record], "int | None"]


def osl_gate(
    run_dir: str | Path | Run,
    *,
    profile: str | None = None,
    shards: str | Path | None = None,
    tokenizer: str | None = None,
    gates: str = "official",
    write: bool = True,
    progress: traces.Progress | None = None,
) -> OslResult:
    """OSL statistics of a run and the verdict against the band of `gates` (official: the band
    of `profile`, default the run's; docs/accuracy.md); `progress` counts the answers counted
    with a tokenizer. A `Run` (`open_run`) shares its records and ground truth with the other
    gates given it (`score_run`)."""
    check_mode(gates)
    run = run_dir if isinstance(run_dir, Run) else open_run(run_dir, shards)
    result = osl_of(run, profile, tokenizer=tokenizer, gates=gates, progress=progress)
    if write:
        result.write(run.path)
        amend_seal(run.path, [OSL_FILE], "eval osl")  # a sealed folder stays sealed (docs/files.md)
    return result


def client_counter(run: Run, profile: traces.Profile, tokenizer: str | None) -> tuple[Count | None, str | None]:
    """How to count an answer the reference's way, and which tokenizer does it (None, None: no
    tokenizer is available and the server's usage must do)."""
    if tokenizer is not None:
        return _recount(tokenizer, profile), tokenizer
    if any(r.client_output_tokens is not None for r in run.records() if not r.failed):
        return (lambda r: r.client_output_tokens), run.config.tokenizer or "the run's"
    spec = profile.tokenizer
    from traces.tokenizers import TOKENIZERS

    kind = TOKENIZERS.get(spec.partition(":")[0])
    if kind is not None and (kind.path is None or ":" in spec):  # loads from files shipped with the package
        try:
            return _recount(spec, profile), spec
        except traces.TraceError:
            pass
    return None, None


def _recount(spec: str, profile: traces.Profile) -> Count:
    from traces.tokenizers import load_tokenizer

    try:
        tok = load_tokenizer(spec, template_kwargs=dict(profile.chat_template_kwargs))
    except traces.TraceError as exc:
        raise EvalError(f"--tokenizer {spec}: {exc}") from None

    def count(r: Record) -> int | None:
        return tok.output_tokens(
            {"content": r.content, "reasoning_content": r.reasoning, "tool_calls": list(r.tool_calls)}
        )

    return count


def osl_of(
    run: Run,
    profile: str | None = None,
    *,
    tokenizer: str | None = None,
    gates: str = "official",
    progress: traces.Progress | None = None,
) -> OslResult:
    name = profile or run.profile_name or "kimi-k3"
    own = run.profile if name == run.profile_name else None  # a user profile run.json records in full
    prof = own if own is not None else traces.get_profile(name)
    records = run.records()
    gt = run.truth()
    in_window = [r for r in records if r.in_window]
    band, basis = osl_band(gates, prof, _mean(_expected([r for r in in_window if not r.failed], gt)))
    lo, hi = band.min, band.max
    count, counted_with = client_counter(run, prof, tokenizer)
    if count is not None:
        count = _counted_once(count, [r for r in records if not r.failed], progress)
    window = _population(in_window, gt, lo, hi, count)
    whole = _population(records, gt, lo, hi, count)
    passed: bool | None
    if basis.mode == "off":
        passed, reason = None, basis.how
    elif basis.official and (lo is None or hi is None):
        passed, reason = None, f"profile {name} has no official OSL band"
    elif window.turns and window.failed == window.turns:
        passed, reason = (
            False,
            f"every one of the {window.turns} window turns failed: there is no output to measure; see the run's errors",
        )
    elif lo is None or hi is None:  # a dataset band with nothing to derive it from
        passed, reason = None, basis.how
    elif window.mean is None:
        passed, reason = (
            False,
            (
                "no output token counts in the window: the server sent no usage and no tokenizer was available; "
                "rerun `trajbench eval osl` with --tokenizer"
            ),
        )
    else:
        passed = window.in_band
        reason = _verdict(window.mean, lo, hi)
    if not basis.official and passed is not None:
        reason += f" (research band, {MODE_NAMES[basis.mode]} — {RESEARCH_NOTE})"
    return OslResult(
        profile=name,
        band=band,
        passed=passed,
        reason=reason,
        method="client-tokenizer" if count is not None else "server-usage",
        tokenizer=counted_with,
        window=window,
        all=whole,
        gates=basis,
    )


def _counted_once(count: Count, records: list[Record], progress: traces.Progress | None) -> Count:
    """Count every answer once, up front (a tokenizer's count is the slow part, and the window
    and the whole run share their answers), and look the counts up after."""
    if progress is not None:
        progress.set_total(len(records))
    counts: dict[tuple[str, int], int | None] = {}
    for r in records:
        counts[(r.instance_id, r.turn)] = count(r)
        if progress is not None:
            progress.advance()
    return lambda r: counts[(r.instance_id, r.turn)] if (r.instance_id, r.turn) in counts else count(r)


def _mean(values: list[int]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _expected(ok: list[Record], gt: GroundTruth) -> list[int]:
    """The recorded answers' output tokens (`expected_osl_tokens`) of the given turns."""
    return [
        n
        for t in (gt.truths.get((r.trajectory_id, r.turn)) for r in ok)
        if t is not None and (n := t.expected_osl_tokens) is not None
    ]


def _population(
    records: list[Record], gt: GroundTruth, lo: float | None, hi: float | None, count: Count | None
) -> OslPopulation:
    ok = [r for r in records if not r.failed]  # answered: ok or partial, as the reference counts them
    server = [n for r in ok if (n := r.completion_tokens) is not None]
    pairs = [(r, count(r)) for r in ok] if count is not None else []
    client = [n for _, n in pairs if n is not None]
    both = [n - s for r, n in pairs if n is not None and (s := r.completion_tokens) is not None]
    expected = _expected(ok, gt)
    gate = client if count is not None else server
    mean = _mean(gate)
    in_band = outside_by = None
    if mean is not None and lo is not None and hi is not None:
        in_band = lo <= mean <= hi
        outside_by = round(mean - hi, 2) if mean > hi else round(mean - lo, 2) if mean < lo else 0.0
    return OslPopulation(
        turns=len(records),
        failed=len(records) - len(ok),
        counted=len(gate),
        uncounted=len(ok) - len(gate),
        mean=mean,
        client_counted=len(client),
        client_mean=_mean(client),
        server_counted=len(server),
        server_mean=_mean(server),
        client_minus_server_mean=_mean(both),
        expected_mean=_mean(expected),
        in_band=in_band,
        outside_by=outside_by,
    )


def _verdict(mean: float, lo: float, hi: float) -> str:
    if mean < lo:
        return f"window mean {mean:.2f} is {lo - mean:.2f} tokens below the band {lo:g}-{hi:g}"
    if mean > hi:
        return f"window mean {mean:.2f} is {mean - hi:.2f} tokens above the band {lo:g}-{hi:g}"
    return f"window mean {mean:.2f} is inside the band {lo:g}-{hi:g} ({mean - lo:.2f} above min, {hi - mean:.2f} below max)"


def summary_lines(result: OslResult) -> list[str]:
    how = (
        f"client tokenizer {result.tokenizer} (the reference's count)"
        if result.method == "client-tokenizer"
        else "server usage"
    )
    lines = [f"output tokens counted by {how}"]
    for label, p in (("window", result.window), ("all", result.all)):
        exp = "" if p.expected_mean is None else f", dataset expects {p.expected_mean:.2f}"
        mean = "n/a" if p.mean is None else f"{p.mean:.2f}"
        band = "" if p.in_band is None else (" (in band)" if p.in_band else f" (outside by {p.outside_by:+.2f})")
        server = (
            f", server usage {p.server_mean:.2f}"
            if result.method == "client-tokenizer" and p.server_mean is not None
            else ""
        )
        lines.append(
            f"{label:>6}: mean {mean} tokens/turn over {p.counted:,} turns{band}{exp}{server}; "
            f"{p.failed:,} failed, {p.uncounted:,} uncounted"
        )
    verdict = {True: "PASS", False: "FAIL", None: "n/a"}[result.passed]
    lines.append(f"{verdict}: {result.reason}")
    if not result.gates.official and result.passed is not None:
        lines.append(f"gates: {result.gates.how}")
    return lines
