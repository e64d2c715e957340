"""The files eval writes into a run folder, as typed files (docs/files.md): `scores.json` (inline
accuracy, in the reference scorer's shape, and the `swebench` line of a SWE-bench run) and
`osl.json` (the OSL gate, both token counts)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import traces

from .layout import OSL_FILE, SCORES_FILE, merge_scores

#: How a gate's bar is set (docs/accuracy.md): the profile's official numbers, numbers derived
#: from the dataset's own recorded answers (research), or no bar at all (research).
GATE_MODES = ("official", "dataset", "off")

#: What a reader is told about a point judged by anything but the official gates.
RESEARCH_NOTE = "not an official result"


@dataclass(frozen=True)
class InlineGate:
    """How scores.json's threshold was set. Files written before research gates existed were
    judged by the official threshold, which is what the defaults say."""

    mode: str = "official"
    official: bool = True
    how: str = "the profile's official inline threshold"
    #: dataset mode: the recorded answers' own mean score over the same scored turns
    perfect_score: float | None = None
    #: dataset mode: the share of that perfect score the threshold asks for
    factor: float | None = None


@dataclass(frozen=True)
class OslGate:
    """How osl.json's band was set (defaults: the official band, as for older files)."""

    mode: str = "official"
    official: bool = True
    how: str = "the profile's official OSL band"
    #: dataset mode: the recorded answers' mean output tokens over the same window turns
    centre: float | None = None
    #: dataset mode: the band's half-width as a share of the centre
    tolerance: float | None = None


@dataclass(frozen=True)
class DomainScore:
    score: float | None
    scored: int


@dataclass(frozen=True)
class TurnTotals:
    """The reference's counts (issued, expected, observed, missing, scored), then trajbench's."""

    issued: int  # issued turns with a recorded answer, the turns a failure aborted included
    expected: int  # of those, the scorable ones
    observed: int  # of those, the ones with an output
    missing: int
    scored: int
    sent: int
    aborted_unsent: int
    without_answer: int  # issued turns whose trajectory ends on them (nothing to score against)
    not_issued: int  # turns of started instances never sent for another reason (stop, interrupt)
    missing_by_status: dict[str, int]


@dataclass(frozen=True)
class WindowScore:
    score: float | None
    scored: int
    domains: dict[str, DomainScore]


@dataclass(frozen=True)
class Mismatch:
    expected: str
    produced: str
    count: int


@dataclass(frozen=True)
class Scores(traces.JsonFile):
    """scores.json. `per_turn` and `excluded_turns` rows keep the reference scorer's keys (which
    differ by domain); other tools may add keys of their own (`eval swebench` adds `swebench`),
    which a rewrite keeps."""

    FILE = SCORES_FILE
    SORT_KEYS = False

    score: float | None
    turns: TurnTotals
    domains: dict[str, DomainScore]
    per_turn: list[dict[str, Any]]
    excluded_turns: list[dict[str, Any]]
    window: WindowScore
    profile: str | None
    threshold: float | None
    passed: bool | None
    mismatches: dict[str, list[Mismatch]]
    rules: dict[str, Any]
    reading: str
    dataset: dict[str, str]
    gates: InlineGate = InlineGate()

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write, keeping the keys other tools merged into an existing file."""
        return merge_scores(folder, self.to_json())


@dataclass(frozen=True)
class OslPopulation:
    """The OSL statistics of one population of turns (the window, or all turns)."""

    turns: int
    failed: int
    counted: int  # turns counted by the gate's method
    uncounted: int
    mean: float | None  # the gate's mean
    client_counted: int
    client_mean: float | None  # the reference's count (the chat template's)
    server_counted: int
    server_mean: float | None  # the server's usage
    client_minus_server_mean: float | None
    expected_mean: float | None  # the dataset's recorded answers, over the same turns
    in_band: bool | None
    outside_by: float | None


@dataclass(frozen=True)
class Band:
    min: float | None
    max: float | None


@dataclass(frozen=True)
class OslResult(traces.JsonFile):
    """osl.json: the verdict, the method the gate used, and both populations."""

    FILE = OSL_FILE
    SORT_KEYS = False

    profile: str
    band: Band
    passed: bool | None
    reason: str
    method: str  # "client-tokenizer" (the reference's count) or "server-usage"
    tokenizer: str | None
    window: OslPopulation
    all: OslPopulation
    gates: OslGate = OslGate()
