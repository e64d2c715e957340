"""Everything the explorer reads from a submission tree (`trajbench submit`), in one place.

A submission tree holds, at its root, `trajbench-submission.json` (who submitted which system
when, on which model, dataset and engine, and its Pareto points) and, once `trajbench review`
ran, `review.json` (passed or failed, with each check's result); under
`{division}/{submitter}/systems/{system}.json` the system's description (the checker's fields,
plus trajbench's accelerator type and count, price per hour and power); and under each point's
scenario folder the point's whole sealed run folder (docs/explore.md "Submission trees").

The tree is discovered, not walked by fixed paths: the root is wherever a
`trajbench-submission.json` is, and the run folders are the folders under it that hold a
`run.json`. Each file is a typed dataclass; a field the explorer does not need may be absent
(its default), a field of the wrong type is refused with the file and the field's name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

import traces
from replay import RUN_FILE, ResultSummary

from ..errors import EvalError

SUBMISSION_FILE = "trajbench-submission.json"
REVIEW_FILE = "review.json"
SYSTEMS_DIR = "systems"


@dataclass(frozen=True)
class SubmittedPoint:
    """One Pareto point of a submission: its scenario folder (relative to the tree root), its
    concurrency and the digest its run folder was sealed with."""

    scenario: str
    concurrency: int
    seal: str | None = None


@dataclass(frozen=True)
class SubmissionManifest(traces.JsonFile):
    """`trajbench-submission.json` at the root of a submission tree."""

    FILE = SUBMISSION_FILE

    submitter: str
    system: str
    profile: str
    submission_date: str  # ISO 8601 date (or date and time): when the results were submitted
    division: str = ""
    benchmark: str = ""
    trajbench_version: str = ""
    dataset_hash: str = ""
    #: the engine that served every point (name and version); a string or an object of fields
    engine: Any = None
    swebench_mean: float | None = None
    points: list[SubmittedPoint] = field(default_factory=list)

    def engine_name(self) -> str | None:
        return engine_label(self.engine)


def engine_label(engine: Any) -> str | None:
    """An engine identity as one line: a string as it is, an object as its values in key order
    (`{"name": "vllm", "version": "0.9.1"}` → "vllm 0.9.1")."""
    if engine is None or engine == "" or engine == {}:
        return None
    if isinstance(engine, dict):
        return " ".join(str(engine[k]) for k in sorted(engine) if engine[k] not in (None, "")) or None
    return str(engine)


@dataclass(frozen=True)
class SystemDescription:
    """`{division}/{submitter}/systems/{system}.json`: the checker's fields the explorer shows,
    and trajbench's additions that normalise a system's numbers (None: not given)."""

    system_name: str | None = None
    submitter: str | None = None
    status: str | None = None
    accelerator_model_name: str | None = None
    accelerators_per_node: str | int | None = None
    number_of_nodes: str | int | None = None
    framework: str | None = None
    #: trajbench's fields
    accelerator_type: str | None = None
    accelerator_count: int | None = None
    price_per_hour_usd: float | None = None
    power_watts: float | None = None

    def accelerator(self) -> str | None:
        return self.accelerator_type or _given(self.accelerator_model_name)

    def accelerators(self) -> int | None:
        """The accelerator count: trajbench's field, else nodes × accelerators per node."""
        if self.accelerator_count is not None:
            return self.accelerator_count
        per_node, nodes = _count(self.accelerators_per_node), _count(self.number_of_nodes)
        if per_node is None:
            return None
        return per_node * (nodes if nodes is not None else 1)


def _given(text: str | None) -> str | None:
    """A checker field as given, or None for an empty one or a scaffold's TODO placeholder."""
    if text is None or not text.strip() or text.strip().upper().startswith("TODO"):
        return None
    return text.strip()


def _count(value: str | int | None) -> int | None:
    if isinstance(value, int):
        return value
    text = _given(value)
    return int(text) if text is not None and text.isdigit() else None


@dataclass(frozen=True)
class ReviewCheck:
    """One check of a review: the point it judged (a scenario or run folder; anything else is
    the submission as a whole), its name, the verdict and why."""

    point: str
    check: str
    passed: bool
    reason: str = ""


@dataclass(frozen=True)
class Review(traces.JsonFile):
    """`review.json` (`trajbench review`) at the root of a submission tree."""

    FILE = REVIEW_FILE

    passed: bool
    checks: list[ReviewCheck] = field(default_factory=list)


@dataclass(frozen=True)
class Submission:
    """One submission tree as the explorer sees it."""

    root: Path
    manifest: SubmissionManifest
    description: SystemDescription | None
    description_file: str  # where the description is (or was looked for), relative to the root
    review: Review | None
    run_dirs: tuple[Path, ...]  # every finished run folder under the root, sorted

    def checks_of(self, run_dir: Path) -> list[ReviewCheck]:
        """The review's checks of one run folder: those naming it (or a folder above it, such as
        its scenario folder), then those of the submission as a whole (naming no run folder)."""
        if self.review is None:
            return []
        mine = self._names(run_dir)
        return [c for c in self.review.checks if _norm(c.point) in mine or _norm(c.point) not in self._any_run]

    @cached_property
    def _any_run(self) -> set[str]:
        """Every name of every run folder: a check naming none of them is the submission's."""
        return set().union(*(self._names(d) for d in self.run_dirs))

    def _names(self, run_dir: Path) -> set[str]:
        """The ways a review may name a run folder: its path from the root, the path of every
        folder between the root and it, and its own name."""
        rel = PurePosixPath(run_dir.relative_to(self.root).as_posix())
        names = {rel.as_posix(), run_dir.name}
        names |= {p.as_posix() for p in rel.parents if p.as_posix() != "."}
        names |= {(PurePosixPath(self.root.as_posix()) / n).as_posix() for n in list(names)}
        return names

    def seal_of(self, run_dir: Path) -> str | None:
        """The seal digest the manifest lists for the point whose scenario folder holds `run_dir`."""
        rel = PurePosixPath(run_dir.relative_to(self.root).as_posix())
        for p in self.manifest.points:
            scenario = PurePosixPath(_norm(p.scenario))
            if rel == scenario or scenario in rel.parents:
                return p.seal
        return None


def _norm(text: str) -> str:
    """A folder as a review or a manifest names it, comparable: posix, no ./ or trailing /."""
    return PurePosixPath(text.replace(os.sep, "/")).as_posix().removeprefix("./")


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise EvalError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise EvalError(f"{path}: not valid JSON ({exc}); rewrite it with `trajbench submit`") from None


def _contract(cls: Any, path: Path) -> Any:
    try:
        return traces.from_json(cls, _read_json(path), str(path))
    except traces.ContractError as exc:
        raise EvalError(f"{exc} (docs/explore.md lists the fields the explorer reads)") from None


def _run_dirs(root: Path) -> list[Path]:
    """The finished run folders under a submission root (a submission tree nested under it is
    its own submission), sorted."""
    found = []
    for here, dirs, files in os.walk(root):
        path = Path(here)
        if path != root and SUBMISSION_FILE in files:
            dirs.clear()
        elif RUN_FILE in files and ResultSummary.exists(path):
            found.append(path)
    return sorted(found)


def load_submission(root: Path) -> Submission:
    """A submission tree: its manifest, its system's description and review (None when the tree
    has none) and its finished run folders."""
    manifest: SubmissionManifest = _contract(SubmissionManifest, root / SUBMISSION_FILE)
    where = PurePosixPath(manifest.division, manifest.submitter, SYSTEMS_DIR, f"{manifest.system}.json")
    if not manifest.division:  # the division is the folder the submitter's folder sits in
        found = sorted(root.glob(f"*/{manifest.submitter}/{SYSTEMS_DIR}/{manifest.system}.json"))
        where = PurePosixPath(found[0].relative_to(root).as_posix()) if found else where
    desc_path = root / where
    description = _contract(SystemDescription, desc_path) if desc_path.is_file() else None
    review = _contract(Review, root / REVIEW_FILE) if Review.exists(root) else None
    runs = tuple(_run_dirs(root))
    if not runs:
        raise EvalError(
            f"{root / SUBMISSION_FILE}: no finished run folder (run.json with its result summary) under {root}; "
            "a submission holds each point's run folder (rebuild it with `trajbench submit`)"
        )
    return Submission(root, manifest, description, where.as_posix(), review, runs)
