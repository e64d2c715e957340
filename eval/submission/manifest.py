"""`trajbench-submission.json`: what a submission tree holds, at its root (docs/submission.md).

The submission's identity (division, submitter, system, benchmark and profile, dataset hash),
one entry per Pareto point (its scenario folder, concurrency, the run folder's digest and seal,
its headline numbers), the runs left out and why, the SWE-bench runs and their mean, and the
sha256 of every file in the tree. The review recomputes all of it from the tree; the results
explorer reads it (with systems/{system}.json) to place a system's points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import traces

from .files import FileEntry
from .layout import SUBMISSION_FILE

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Headline:
    """A point's published numbers, each recomputable from its run folder: trajbench's (over
    the window turns that succeeded), the reference's keys, and the two accuracy gates."""

    concurrency: int
    output_tokens_per_s: float  # system throughput (the Pareto y-axis)
    per_user_tokens_per_s: float  # pooled per-user speed, e2e_interactivity (the x-axis)
    requests_per_s: float
    window_turns: int  # turns issued in the performance window (sent or aborted)
    window_not_ok: int  # of those, failed, aborted or cancelled
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p90_ms: float | None
    n_samples_issued: int  # the reference's keys, with its meanings
    n_samples_completed: int
    n_samples_failed: int
    duration_ns: int | None
    qps: float | None
    tps: float | None
    inline_score: float | None  # scores.json's score, recomputed from the records
    osl_mean: float | None  # osl.json's window mean


@dataclass(frozen=True)
class PointEntry:
    scenario: str  # the scenario folder's name
    path: str  # the scenario folder, relative to the tree root
    run: str  # the copied run folder, relative to the tree root
    source: str  # the run folder's name where it was measured (e.g. c0008)
    concurrency: int
    started_at: str  # run.json's
    target: str  # "real", or "simulated" (never an official point)
    gates: str  # "official", or the research gate modes that judged it
    run_digest: str  # sha256 over the copied run folder's files (files.folder_digest)
    seal_sha256: str | None  # sha256 of the run folder's seal.json, when it has one
    engine: Any  # run.json's engine identity, when the run recorded one
    headline: Headline


@dataclass(frozen=True)
class Excluded:
    """A run given to `submit` that is not a point of the submission, and why."""

    source: str
    concurrency: int
    reason: str


@dataclass(frozen=True)
class SwebenchRun:
    path: str  # the copied SWE-bench folder, relative to the tree root
    score: float
    resolved: int
    instances: int
    incomplete: int


@dataclass(frozen=True)
class Swebench:
    """The SWE-bench region runs (eval.swebench.swebench_mean over the copies)."""

    runs: list[SwebenchRun]
    mean: float
    threshold: float | None
    passed: bool
    notes: list[str]


@dataclass(frozen=True)
class SubmissionManifest(traces.JsonFile):
    FILE = SUBMISSION_FILE

    format_version: int
    trajbench_version: str
    submission_date: str  # YYYY-MM-DD
    division: str
    submitter: str
    system: str
    benchmark: str
    profile: str
    system_file: str  # systems/{system}.json, relative to the tree root
    dataset_name: str
    dataset_hash: str  # the shards' content hash every point replayed
    points: list[PointEntry]
    excluded: list[Excluded]
    swebench: Swebench | None
    #: every file of the tree but this one and a review's, by path relative to the root
    files: dict[str, FileEntry]
