"""Everything the explorer reads from a submission tree, through the submission room's own typed
files and layout (`eval.submission`, docs/submission.md), so the explorer reads exactly what
`trajbench submit` writes and `trajbench review` judges.

From a tree the explorer reads the manifest (`trajbench-submission.json`: who submitted which
system when, and each Pareto point's scenario folder, run folder, seal digest and engine), the
system description it names (`systems/{system}.json`: the accelerators, price and power) and,
once `trajbench review` ran, `review.json` at the root. A point's run folder is where the layout
puts it (`{scenario}/trajbench/`); a manifest naming another place is refused, so nothing is
read from outside the tree. Every problem names its file and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import traces
from replay import RUN_FILE, EngineIdentity, ResultSummary

from ..errors import EvalError
from ..submission import (
    DIVISIONS,
    REVIEW_FILE,
    SUBMISSION_FILE,
    PointEntry,
    ReviewCheck,
    ReviewReport,
    SubmissionManifest,
    SystemDescription,
    Tree,
    check_name,
    scenario_name,
)

#: how the fix of a broken tree reads: the tree is submit's to write
REBUILD = "rebuild the tree with `trajbench submit` (docs/submission.md)"


@dataclass(frozen=True)
class TreePoint:
    """A point of a tree: its run folder, its manifest entry, and the engine identity the entry
    copies from run.json, read into replay's typed class."""

    run: Path
    entry: PointEntry
    engine: EngineIdentity | None


@dataclass(frozen=True)
class Submission:
    """One submission tree as the explorer sees it."""

    root: Path
    manifest: SubmissionManifest
    description: SystemDescription | None
    review: ReviewReport | None
    points: tuple[TreePoint, ...]  # in the manifest's order (by concurrency)

    @property
    def description_file(self) -> str:
        """Where the system description is (or was looked for), relative to the root."""
        return self.manifest.system_file

    @property
    def run_dirs(self) -> tuple[Path, ...]:
        return tuple(p.run for p in self.points)

    def entry_of(self, run_dir: Path) -> PointEntry | None:
        return next((p.entry for p in self.points if p.run == run_dir), None)

    def checks_of(self, run_dir: Path) -> list[ReviewCheck]:
        """The review's checks of one point (naming its scenario or run folder), then those of
        the submission as a whole (naming no point)."""
        entry = self.entry_of(run_dir)
        if self.review is None or entry is None:
            return []
        mine = {entry.path, entry.run}
        return [c for c in self.review.checks if c.point in mine or c.point not in self._named]

    @cached_property
    def _named(self) -> frozenset[str]:
        """Every folder a review check may name a point by."""
        return frozenset(name for p in self.points for name in (p.entry.path, p.entry.run))

    def seal_of(self, run_dir: Path) -> str | None:
        """The sha256 of the point's seal.json, as the manifest lists it."""
        entry = self.entry_of(run_dir)
        return entry.seal_sha256 if entry is not None else None

    def engines(self) -> list[str]:
        """The engines its points ran on (run.json's engine identity, which the manifest copies),
        each as "name version", sorted; an engine that could not be told is left out."""
        return sorted({label for p in self.points if (label := _engine_label(p.engine)) is not None})


def _engine_label(engine: EngineIdentity | None) -> str | None:
    if engine is None or engine.engine == "unknown":
        return None
    return f"{engine.engine} {engine.version}" if engine.version else engine.engine


def _manifest(root: Path) -> SubmissionManifest:
    try:
        return SubmissionManifest.read(root)
    except traces.ContractError as exc:
        raise EvalError(f"{exc}; {REBUILD}") from None


def _tree(root: Path, m: SubmissionManifest) -> Tree:
    """The tree's layout from the manifest's names, each checked as the review checks it (a name
    that is not one folder name could lead outside the tree)."""
    where = root / SUBMISSION_FILE
    if m.division not in DIVISIONS:
        raise EvalError(f"{where}: division: {m.division!r} is not one of {', '.join(DIVISIONS)}; {REBUILD}")
    for key, value in (("submitter", m.submitter), ("system", m.system), ("benchmark", m.benchmark)):
        try:
            check_name(key, value)
        except EvalError as exc:
            raise EvalError(f"{where}: {exc}") from None
    return Tree(root, m.division, m.submitter, m.system, m.benchmark)


def _points(tree: Tree, m: SubmissionManifest) -> tuple[TreePoint, ...]:
    """Each point's finished run folder, where the layout puts it, with its entry (its engine
    read into replay's typed identity)."""
    where = tree.root / SUBMISSION_FILE
    out = []
    for i, p in enumerate(m.points):
        sc = tree.scenario(scenario_name(p.concurrency))
        for key, named, placed in (
            ("scenario", p.scenario, sc.name),
            ("path", p.path, tree.rel(sc.dir)),
            ("run", p.run, tree.rel(sc.run)),
        ):
            if named != placed:
                raise EvalError(
                    f"{where}: points[{i}].{key}: {named!r} is not where the layout puts the point at concurrency "
                    f"{p.concurrency} ({placed!r}); {REBUILD}"
                )
        if not ((sc.run / RUN_FILE).is_file() and ResultSummary.exists(sc.run)):
            raise EvalError(
                f"{where}: points[{i}].run: {p.run} is not a finished run folder ({RUN_FILE} with its result "
                f"summary {ResultSummary.FILE}); {REBUILD}"
            )
        try:
            engine = (
                None if p.engine is None else traces.from_json(EngineIdentity, p.engine, f"{where}: points[{i}].engine")
            )
        except traces.ContractError as exc:
            raise EvalError(f"{exc}; {REBUILD}") from None
        out.append(TreePoint(sc.run, p, engine))
    if not out:
        raise EvalError(f"{where}: points: none; a submission holds at least one point; {REBUILD}")
    return tuple(out)


def _description(tree: Tree, m: SubmissionManifest) -> SystemDescription | None:
    where = tree.root / SUBMISSION_FILE
    if m.system_file != tree.rel(tree.system_file):
        raise EvalError(f"{where}: system_file: {m.system_file!r} is not {tree.rel(tree.system_file)!r}; {REBUILD}")
    path = tree.system_file
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise EvalError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise EvalError(f"{path}: not valid JSON ({exc}); {REBUILD}") from None
    if not isinstance(data, dict):
        raise EvalError(f"{path}: not a JSON object of the system's fields; {REBUILD}")
    return SystemDescription.from_json(data, str(path))


def _review(root: Path, m: SubmissionManifest) -> ReviewReport | None:
    """review.json, when the tree has one; a review of another submission (a copied file) is
    refused rather than vouching for this one."""
    if not ReviewReport.exists(root):
        return None
    try:
        report = ReviewReport.read(root)
    except traces.ContractError as exc:
        raise EvalError(f"{exc}; review the tree again with `trajbench review`") from None
    for key in ("division", "submitter", "system", "benchmark", "submission_date"):
        mine, theirs = getattr(m, key), getattr(report, key)
        if mine != theirs:
            raise EvalError(
                f"{root / REVIEW_FILE}: {key}: {theirs!r}, but the submission's is {mine!r}: a review of another "
                "submission; review this tree with `trajbench review`"
            )
    now = traces.sha256_file(root / SUBMISSION_FILE)
    if report.manifest_sha256 != now:
        raise EvalError(
            f"{root / REVIEW_FILE}: reviewed {SUBMISSION_FILE} with sha256 {report.manifest_sha256[:16] or '(none)'}…, "
            f"now {now[:16]}…: the tree changed after its review; review it again with `trajbench review`"
        )
    return report


def load_submission(root: Path) -> Submission:
    """A submission tree: its manifest, its points' run folders, its system's description and
    its review (None when the tree has none)."""
    manifest = _manifest(root)
    tree = _tree(root, manifest)
    points = _points(tree, manifest)
    return Submission(root, manifest, _description(tree, manifest), _review(root, manifest), points)
