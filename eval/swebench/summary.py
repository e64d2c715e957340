"""What a SWE-bench run folder says: per-instance statuses, `swebench_summary.json`, the
`swebench` entry of `scores.json`, and the mean over the region runs (docs/accuracy.md).

Light on purpose (no mini-swe-agent, no swebench): the compliance check and `swebench-mean`
read run folders without the extra installed.

`swebench_summary.json` is the typed `SwebenchSummary` (the compliance check and
`swebench-mean` read it); its headline is merged into scores.json as `SwebenchScore`. Its provenance records `engine`: who the endpoint said it was, as run.json
records it, which the same-model audit compares with the performance points' (docs/audits.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import traces
from replay import EngineIdentity

from ..errors import EvalError
from ..layout import SWEBENCH_SUMMARY_FILE as SUMMARY_FILE
from ..layout import merge_scores
from .errors import SwebenchError

GRADE_FILE = "grade.json"
PATCH_FILE = "patch.diff"
TRAJECTORY_FILE = "trajectory.json"
AGENT_LOG = "agent.log"
STATUSES = ("resolved", "unresolved", "incomplete")
REGION_RUNS = 4  # docs/accuracy.md: one run in each of the 4 mandatory concurrency regions
OFFICIAL_INSTANCES = 200


def write_json(path: Path, value: Any) -> None:
    """Write atomically, so an interrupt leaves the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def instance_dir(folder: Path, name: str) -> Path:
    """`folder/name` for an instance (its run folder, its task repository), refused when it would
    lead anywhere else: a path, `..`, or a link out of `folder`. Ids are checked when the
    dataset is loaded; this keeps every path inside its folder whatever reaches it."""
    path = folder / name
    plain = bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name
    if not plain or (path.is_symlink() and path.resolve().parent != folder.resolve()):
        raise SwebenchError(
            f"instance {name!r}: would be read or written outside {folder}; instance ids must be plain names like django__django-11099"
        )
    return path


def instance_status(out: Path, instance_id: str) -> str:
    """resolved / unresolved from the instance's grade.json; incomplete when it has none."""
    grade = instance_dir(out, instance_id) / GRADE_FILE
    if not grade.is_file():
        return "incomplete"
    status = json.loads(grade.read_text("utf-8")).get("status")
    return status if status in ("resolved", "unresolved") else "incomplete"


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """What ran: the served model, the endpoint, the agent template, the runtime's isolation and
    the extra's package versions (at the top level of the summary)."""

    model: str | None = None
    endpoint: str | None = None
    template: str | None = None
    isolated: bool | None = None
    versions: dict[str, str] = field(default_factory=dict)
    workers: int | None = None
    dataset: str | None = None
    # who the endpoint said it was, as run.json records it (the same-model audit, docs/audits.md)
    engine: EngineIdentity | None = None


@dataclass(frozen=True)
class SwebenchScore:
    """The `swebench` line of scores.json: a SWE-bench run's headline."""

    score: float
    resolved: int
    instances: int
    incomplete: int
    profile: str
    runtime: str
    concurrency: int | None


@dataclass(frozen=True)
class SwebenchSummary(Provenance, traces.JsonFile):
    """swebench_summary.json: the counts, each instance's status, and what ran."""

    FILE = SUMMARY_FILE

    kind: str  # "swebench": tells the file from another tool's
    profile: str
    instances: int
    resolved: int
    incomplete: int
    score: float  # resolved / instances
    concurrency: int | None
    runtime: str
    unresolved: int = 0
    instance_ids: list[str] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)  # id: resolved, unresolved or incomplete

    @property
    def line(self) -> SwebenchScore:
        return SwebenchScore(
            self.score, self.resolved, self.instances, self.incomplete, self.profile, self.runtime, self.concurrency
        )

    def todo(self) -> list[str]:
        """The instances to rerun (--resume): the incomplete ones."""
        return [i for i, status in self.results.items() if status == "incomplete"]


def build_summary(
    out: Path, instance_ids: list[str], *, profile: str, runtime: str, concurrency: int | None, provenance: Provenance
) -> SwebenchSummary:
    results = {iid: instance_status(out, iid) for iid in instance_ids}
    n = len(instance_ids)
    resolved = sum(1 for s in results.values() if s == "resolved")
    return SwebenchSummary(
        kind="swebench",
        profile=profile,
        instances=n,
        resolved=resolved,
        unresolved=sum(1 for s in results.values() if s == "unresolved"),
        incomplete=sum(1 for s in results.values() if s == "incomplete"),
        score=round(resolved / n, 4) if n else 0.0,
        concurrency=concurrency,
        runtime=runtime,
        instance_ids=list(instance_ids),
        results=results,
        **{f.name: getattr(provenance, f.name) for f in fields(provenance)},
    )


def write_results(out: Path, summary: SwebenchSummary) -> None:
    """Write the summary and merge its line into scores.json (other keys are kept)."""
    summary.write(out)
    try:
        merge_scores(out, {"swebench": traces.to_json(summary.line)})
    except EvalError as exc:
        raise SwebenchError(f"{exc}; the SWE-bench line is merged into it") from None


def read_summary(run_dir: str | Path) -> SwebenchSummary:
    p = Path(run_dir) / SUMMARY_FILE
    if not p.is_file():
        raise SwebenchError(f"{p}: not found; pass folders written by `trajbench eval swebench`")
    try:
        summary = SwebenchSummary.read(run_dir)
    except traces.ContractError as exc:
        raise SwebenchError(f"{exc}; pass folders written by `trajbench eval swebench`") from None
    if summary.kind != "swebench":
        raise SwebenchError(f"{p}: not a SWE-bench summary (kind {summary.kind!r})")
    return summary


@dataclass(frozen=True)
class MeanResult:
    profile: str
    runs: tuple[tuple[str, float, int, int, int], ...]  # (run dir, score, resolved, instances, incomplete)
    mean: float
    threshold: float | None
    notes: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """The mean reaches the threshold (the notes say whether the runs are official ones)."""
        return self.threshold is not None and self.mean >= self.threshold


def swebench_mean(run_dirs: list[str]) -> MeanResult:
    """The mean score of the region runs against the profile's SWE-bench threshold."""
    if not run_dirs:
        raise SwebenchError("no run folders given; pass the folder of each region's `trajbench eval swebench` run")
    summaries = [(d, read_summary(d)) for d in run_dirs]
    profiles = sorted({s.profile for _, s in summaries})
    if len(profiles) != 1:
        raise SwebenchError(f"the runs use different profiles ({', '.join(profiles)}); the mean is per model profile")
    profile = profiles[0]
    notes: list[str] = []
    if len(summaries) != REGION_RUNS:
        notes.append(
            f"{len(summaries)} run(s); the official figure is the mean of {REGION_RUNS} (one per concurrency region)"
        )
    for d, s in summaries:
        if s.instances != OFFICIAL_INSTANCES:
            notes.append(f"{d}: {s.instances} instances; official runs use {OFFICIAL_INSTANCES}")
        if s.incomplete:
            notes.append(
                f"{d}: {s.incomplete} incomplete instance(s) (counted as not resolved); rerun it with --resume"
            )
        if s.runtime != "docker":
            notes.append(f"{d}: runtime {s.runtime!r}; official runs use docker")
    runs = tuple((str(d), s.score, s.resolved, s.instances, s.incomplete) for d, s in summaries)
    mean = round(sum(r[1] for r in runs) / len(runs), 4)
    threshold = traces.get_profile(profile).thresholds.swebench if profile in traces.profiles() else None
    if threshold is None:
        notes.append(f"profile {profile} has no official SWE-bench threshold")
    return MeanResult(profile, runs, mean, threshold, tuple(notes))
