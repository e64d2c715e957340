"""`trajbench profiles derive`: a new model's gates from its reference runs (docs/maintainers.md).

The rule, the same as the one behind the official numbers:

- OSL band = the reference mean output tokens per turn (over the runs' window turns, counted as
  the OSL gate counts them) ± a tolerance, 10 % by default: the official bands are their centres
  ± 10 % (390–475 is 432.5 ± 9.8 %, 355–434 is 394.5 ± 10 %);
- inline threshold = a fraction (0.99 by default) of the reference inline score over every scored
  turn of the runs, so a system may lose 1 % of the reference model's accuracy, no more;
- SWE-bench threshold = the same kind of fraction of the reference SWE-bench mean, when
  standalone SWE-bench runs are given; otherwise none (the profile then has no SWE-bench bar).

Reference runs must be official-shaped (a real server, mlperf salt, delays injected, not stopped
at the window's end, complete, a whole number of passes, the profile's own output cap), or their
numbers would not be those an official run sees; `allow_unofficial` derives anyway and records
why each run is not. A run against trajbench's own simulator is the sharpest case: its answers
and their lengths are the simulator's (copies of the recorded ones, or made up), so the gates
would describe the dataset, not the reference model. Everything the rule used is written into
the profile (`derivation`).

Units: every tolerance and fraction is a fraction (0.1 = 10 %), on the command line as in the
profile file, so a value typed on one reads the same in the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import traces

from .errors import EvalError
from .gates import DEFAULT_INLINE_FRACTION, DEFAULT_OSL_TOLERANCE, DEFAULT_SWEBENCH_FRACTION
from .inline import score
from .osl import osl_of
from .rules import default_rules
from .rundir import Run, open_run, partial_run
from .swebench import SwebenchError, swebench_mean

RULE_DOC = "docs/maintainers.md"


@dataclass(frozen=True)
class Derived:
    profile: traces.Profile
    osl_mean: float
    inline_score: float | None
    swebench_score: float | None
    unofficial: tuple[str, ...]


def osl_band_from(centre: float, tolerance: float = DEFAULT_OSL_TOLERANCE) -> tuple[float, float]:
    """The OSL band of a reference mean: centre × (1 ∓ tolerance), to 2 decimals."""
    if not 0 < tolerance < 1:
        hint = f"; for {tolerance:g} % write {tolerance / 100:g}" if 1 <= tolerance < 100 else ""
        raise EvalError(
            f"--osl-tolerance {tolerance:g}: a fraction of the reference mean, between 0 and 1 "
            f"(0.1 = ± 10 %, the official bands' width){hint}"
        )
    return round(centre * (1 - tolerance), 2), round(centre * (1 + tolerance), 2)


def unofficial_reasons(run: Run) -> list[str]:
    """Why a reference run is not official-shaped (empty when it is)."""
    cfg = run.config
    out: list[str] = []
    if cfg.target != "real":
        how = cfg.target_evidence or "run.json says so"
        out.append(
            f"it was simulated: measured against trajbench's simulator ({how}), so its answers and their "
            "lengths are the simulator's, not the reference model's (run the model on a real server, --endpoint URL)"
        )
    if cfg.salt != "mlperf":
        out.append(f"salt mode {cfg.salt!r}, not mlperf (rebuild the shards with --salt mlperf)")
    if not cfg.inject_delays:
        out.append("recorded delays were skipped (drop --no-delays)")
    if cfg.stop_issuing_on_first_user_complete:
        out.append("it stopped issuing at the window's end (drop --stop-at-window-end)")
    if cfg.max_completion_tokens is not None:
        out.append(f"the output cap was overridden (--max-completion-tokens {cfg.max_completion_tokens})")
    size = run.shards.manifest.counts.trajectories
    if cfg.num_trajectories <= 0 or cfg.num_trajectories % size:
        out.append(f"{cfg.num_trajectories} trajectories is not a whole number of passes over {size}")
    partial = partial_run(run.path)
    if partial is not None:
        out.append(partial.split(": ", 1)[1] if ": " in partial else partial)
    return out


def derive_profile(
    run_dirs: Sequence[str | Path],
    name: str,
    *,
    base: str | None = None,
    description: str | None = None,
    osl_tolerance: float = DEFAULT_OSL_TOLERANCE,
    inline_fraction: float = DEFAULT_INLINE_FRACTION,
    swebench: Sequence[str | Path] = (),
    swebench_fraction: float = DEFAULT_SWEBENCH_FRACTION,
    allow_unofficial: bool = False,
) -> Derived:
    """A profile named `name`: the reference runs' profile (or `base`) with thresholds derived
    from the runs by the rule above."""
    if not run_dirs:
        raise EvalError("no reference run given; pass the run folders of the reference model (RUN_DIR…)")
    for option, frac in (("--inline-fraction", inline_fraction), ("--swebench-fraction", swebench_fraction)):
        if not 0 < frac <= 1:
            raise EvalError(f"{option} {frac:g}: must be a fraction in (0, 1]")
    osl_band_from(1.0, osl_tolerance)  # a bad tolerance is told before any run is read
    taken = _name_taken(name)
    if taken:
        raise EvalError(taken)
    runs = [open_run(d) for d in run_dirs]
    hashes = {r.config.dataset.content_hash for r in runs}
    if len(hashes) != 1:
        raise EvalError(
            "the reference runs replayed different datasets (content hashes differ); derive from one dataset"
        )
    names = {r.profile_name for r in runs}
    base_name = base or (names.pop() if len(names) == 1 else None)
    if base_name is None:
        raise EvalError("the reference runs use different profiles; pass --base PROFILE (the one to copy fields from)")
    prof = runs[0].profile if base is None else traces.get_profile(base)
    if prof is None:
        raise EvalError(
            f"profile {base_name!r} is unknown and run.json does not record it; load it with --profiles FILE"
        )
    unofficial = [f"{r.path.name}: {why}" for r in runs for why in unofficial_reasons(r)]
    if unofficial and not allow_unofficial:
        raise EvalError(
            "not official-shaped reference runs: "
            + "; ".join(unofficial)
            + " — rerun them the official way (docs/compliance.md), or pass --allow-unofficial to derive anyway"
        )
    osl_mean, method = _osl_mean(runs)
    lo, hi = osl_band_from(osl_mean, osl_tolerance)
    inline_score = _inline_score(runs)
    if inline_score == 0:
        raise EvalError(
            "the reference runs' inline score is 0: none of the reference model's answers matched the "
            "dataset's recorded ones (no intent code or bash action in common), so a fraction of 0 would be no gate. "
            "Check that the runs replayed this model's own dataset and that the server parses its tool calls "
            "(`trajbench eval inline RUN_DIR` lists the commonest mismatches; docs/accuracy.md)"
        )
    inline = round(inline_fraction * inline_score, 4) if inline_score is not None else None
    swe_score = _swebench_score(swebench)
    swe = round(swebench_fraction * swe_score, 4) if swe_score is not None else None
    derivation: dict[str, Any] = {
        "rule": RULE_DOC,
        "how": (
            f"OSL band = reference mean output tokens per window turn {osl_mean:.2f} ± {osl_tolerance:g} "
            f"({100 * osl_tolerance:g} %); "
            f"inline = {inline_fraction:g} × reference inline score"
            + (f" {inline_score:.4f}" if inline_score is not None else " (none: not judged)")
            + (
                f"; SWE-bench = {swebench_fraction:g} × reference SWE-bench mean {swe_score:.4f}"
                if swe_score is not None
                else "; SWE-bench: no reference runs given (no threshold)"
            )
        ),
        "osl_tolerance": osl_tolerance,
        "inline_fraction": inline_fraction,
        "swebench_fraction": swebench_fraction if swe_score is not None else None,
        "reference": {
            "base_profile": prof.name,
            "dataset_content_hash": hashes.pop(),
            "runs": sorted(r.path.name for r in runs),
            "osl_mean": round(osl_mean, 4),
            "osl_method": method,
            "inline_score": inline_score,
            "swebench_score": swe_score,
            "swebench_runs": len(swebench),
        },
        "official_shaped": not unofficial,
        "unofficial": unofficial,
    }
    derived = replace(
        prof,
        name=name,
        description=description or f"{prof.description} — thresholds derived from reference runs ({RULE_DOC})",
        thresholds=traces.Thresholds(inline=inline, osl_min=lo, osl_max=hi, swebench=swe),
        derivation=derivation,
        source="derived",
    )
    content = {k: v for k, v in derived.content().items() if k != "name"}
    problems = traces.check_profile(name, content)
    if problems:
        raise EvalError(f"the derived profile is not valid: {'; '.join(problems)}")
    return Derived(derived, osl_mean, inline_score, swe_score, tuple(unofficial))


def _name_taken(name: str) -> str:
    if name in traces.profiles():
        what = "a built-in profile" if traces.profiles()[name].built_in else "already a loaded user profile"
        return f"--name {name}: {what}; a derived profile needs a name of its own (e.g. {name}-v2)"
    return ""


def _osl_mean(runs: list[Run]) -> tuple[float, str]:
    """Mean output tokens per window turn over all the runs (each run's mean weighted by its
    counted turns), and the counting method."""
    total = counted = 0.0
    methods: set[str] = set()
    for run in runs:
        res = osl_of(run, gates="off")
        w = res.window
        if w.mean is None or not w.counted:
            raise EvalError(
                f"{run.path}: no output token counts in the window; rerun with --tokenizer (or a server that sends usage)"
            )
        total += w.mean * w.counted
        counted += w.counted
        methods.add(res.method)
    return total / counted, ",".join(sorted(methods))


def _inline_score(runs: list[Run]) -> float | None:
    total = n = 0.0
    for run in runs:
        s = score(run, default_rules(), gates="off")
        if s.score is not None:
            total += s.score * s.turns.scored
            n += s.turns.scored
    return round(total / n, 4) if n else None


def _swebench_score(dirs: Sequence[str | Path]) -> float | None:
    if not dirs:
        return None
    try:
        return swebench_mean([str(d) for d in dirs]).mean
    except SwebenchError as exc:
        raise EvalError(f"--swebench: {exc}") from None
