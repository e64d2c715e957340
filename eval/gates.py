"""Where the bars of the accuracy gates come from, per `--gates` mode (docs/accuracy.md).

The official bars (the profile's inline threshold and OSL band) belong to the official dataset:
on any other dataset a perfect model misses the OSL band, so a study of another dataset could
never draw a frontier. Research modes make such studies possible without ever passing for an
official result:

- `official`: the profile's numbers, as the benchmark's rules set them;
- `dataset`: bars derived from the dataset's own recorded answers over the same turns. The OSL
  band is the recorded answers' mean output tokens ± `OSL_TOLERANCE` (the official bands are
  their centre ± 10 %: 390–475 is 432.5 ± 9.8 %, 355–434 is 394.5 ± 10 %). The inline threshold
  is the score the recorded answers themselves earn (a perfect model's score) times the
  profile's official threshold, read as the share of a perfect score the official gate asks
  for (on the official dataset the recorded answers score about 1, so it gives the official bar);
- `off`: no bar; the statistics are still written, `passed` is null.

Whatever the mode, the files state it with the derived numbers, and anything but `official`
makes a point non-official (`eval check` fails it, the report labels its frontier).
"""

from __future__ import annotations

from collections.abc import Iterable

import traces

from .errors import EvalError
from .results import GATE_MODES, RESEARCH_NOTE, Band, InlineGate, OslGate

#: `--gates`, on every command that judges a run (`replay run`, `replay sweep`, `eval inline`,
#: `eval osl`); a run records it (run.json's `options`), so `--config run.json` judges alike.
GATES_OPTION = traces.Option(
    "gates",
    "Accuracy bars: official (the profile's threshold and OSL band), dataset (research: derived from this "
    "dataset's recorded answers), off (research: not judged); only official makes an official point "
    "(docs/accuracy.md).",
    choices=GATE_MODES,
    default="official",
)

#: The half-width of a dataset-derived OSL band, as a share of its centre.
OSL_TOLERANCE = 0.10

#: `trajbench profiles derive`'s defaults (eval.derive): a new profile's OSL band is the reference
#: mean ± this share, its inline and SWE-bench thresholds these shares of the reference scores.
#: Here, beside the other bars, so the command line shows them without loading the scorers.
DEFAULT_OSL_TOLERANCE = 0.10
DEFAULT_INLINE_FRACTION = 0.99
DEFAULT_SWEBENCH_FRACTION = 0.99

#: How a research mode is named where a reader meets it (chart legends, banners, verdicts).
MODE_NAMES = {"official": "official", "dataset": "dataset-derived", "off": "off (accuracy not judged)"}


def check_mode(mode: str) -> str:
    if mode not in GATE_MODES:
        raise EvalError(
            f"--gates {mode!r} is not a gate mode; choose one of {', '.join(GATE_MODES)} (docs/accuracy.md)"
        )
    return mode


def research_label(modes: Iterable[str]) -> str:
    """The label of a point or frontier judged by research gates, '' for official ones."""
    research = sorted({m for m in modes if m != "official"})
    if not research:
        return ""
    return f"research gates: {', '.join(MODE_NAMES.get(m, m) for m in research)} — {RESEARCH_NOTE}"


def inline_bar(mode: str, profile: traces.Profile | None, perfect: float | None) -> tuple[float | None, InlineGate]:
    """The inline threshold of a mode (None: not judged) and how it was set.

    `perfect` is the mean score of the dataset's recorded answers over the scored turns."""
    official = profile.thresholds.inline if profile is not None else None
    name = profile.name if profile is not None else "this run's"
    if check_mode(mode) == "official":
        if official is None:
            return None, InlineGate(how=f"profile {name} has no official inline threshold: not judged")
        return official, InlineGate()
    if mode == "off":
        return None, InlineGate("off", False, f"off: inline accuracy not judged — {RESEARCH_NOTE}")
    if official is None:
        return None, InlineGate(
            "dataset",
            False,
            f"profile {name} has no official inline threshold to scale a perfect score by: not judged "
            "(use a profile with one, or --gates off)",
            perfect,
        )
    if perfect is None:
        return None, InlineGate("dataset", False, "no scored turn: nothing to derive a threshold from", None, official)
    threshold = round(perfect * official, 4)
    return threshold, InlineGate(
        "dataset",
        False,
        f"dataset-derived: {perfect:.4f} (the score the dataset's recorded answers earn on the same turns) × "
        f"{official:.4f} (profile {name}'s official threshold, the share of a perfect score it asks for) — "
        f"{RESEARCH_NOTE}",
        perfect,
        official,
    )


def osl_band(mode: str, profile: traces.Profile, expected_mean: float | None) -> tuple[Band, OslGate]:
    """The OSL band of a mode (min/max None: not judged) and how it was set.

    `expected_mean` is the recorded answers' mean output tokens over the turns the gate averages."""
    t = profile.thresholds
    if check_mode(mode) == "official":
        return Band(t.osl_min, t.osl_max), OslGate()
    if mode == "off":
        return Band(None, None), OslGate("off", False, f"off: the OSL band was not checked — {RESEARCH_NOTE}")
    if expected_mean is None:
        return Band(None, None), OslGate(
            "dataset",
            False,
            "the shards record no expected output tokens (built without --tokenizer), so no band can be derived: "
            "rebuild them with --tokenizer, or use --gates off",
        )
    lo = round(expected_mean * (1 - OSL_TOLERANCE), 2)
    hi = round(expected_mean * (1 + OSL_TOLERANCE), 2)
    return Band(lo, hi), OslGate(
        "dataset",
        False,
        f"dataset-derived: the recorded answers' mean {expected_mean:.2f} tokens/turn over the same window turns "
        f"± {OSL_TOLERANCE:.0%} (the official bands' own width) — {RESEARCH_NOTE}",
        expected_mean,
        OSL_TOLERANCE,
    )
