"""`trajbench review`: verify a submission tree without trusting it (docs/submission.md).

Nothing the tree states is taken as given. For every point, the checks of `trajbench eval check`
on its run folder (the seal, a complete run within its failure budget, every stored number
recomputed from the records, the official dataset hash, the gates, the target, the settings,
the audits, SWE-bench), and on top what only a tree has: the checker's copies of
result_summary.json (byte copies of the run's) and the manifest's numbers recomputed from the
records, the reference files made again from the run folder, the self-check of the MLPerf
checker's fields. For the tree: every file the manifest lists is there with its bytes and
nothing else is, the folders are where the manifest says. For a rolling submission
(`--previous`): points added and removed are listed, and any changed number of a point already
published fails. The verdict is written as review.json and review.md; any failure is a failed
review.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import replay
import traces

from .compliance import check_submission, expected_hash_of
from .errors import EvalError
from .inline import score
from .results import OslResult, Scores
from .rules import default_rules
from .rundir import open_run
from .submission import (
    DIVISIONS,
    NOT_SUBMITTED,
    REVIEW_FILE,
    REVIEW_MD,
    SEAL_FILE,
    Changes,
    FileEntry,
    PointEntry,
    Recomputed,
    ReviewCheck,
    ReviewReport,
    SubmissionManifest,
    Tree,
    accepted,
    accuracy_results,
    check_name,
    check_scenario,
    check_submitter,
    compare,
    compare_tables,
    file_table,
    folder_digest,
    headline,
    headline_differences,
    markdown,
    null_keys,
    recompute,
    reference_config,
    report_of,
    run_summary_file,
    scenario_name,
    seeds_of,
)
from .swebench import SwebenchError, swebench_mean

SUBMISSION = "submission"
#: how many names of missing, extra or changed files a check line shows
SHOWN_FILES = 8


@dataclass(frozen=True)
class ReviewResult:
    report: ReviewReport
    json_path: Path
    md_path: Path


class _Checks:
    def __init__(self) -> None:
        self.items: list[ReviewCheck] = []

    def add(self, point: str, check: str, passed: bool, reason: str) -> None:
        self.items.append(ReviewCheck(point, check, passed, reason))


def _names(label: str, names: Sequence[str]) -> str:
    shown_names = ", ".join(names[:SHOWN_FILES]) + (
        f" and {len(names) - SHOWN_FILES} more" if len(names) > SHOWN_FILES else ""
    )
    return f"{len(names)} {label} ({shown_names})"


def _files(checks: _Checks, tree: Tree, m: SubmissionManifest, out_dir: Path) -> dict[str, FileEntry]:
    skip = set(NOT_SUBMITTED)
    try:  # a review written into a folder of the tree is not part of it either
        inside = out_dir.resolve().relative_to(tree.root.resolve()).as_posix()
    except ValueError:
        inside = None
    if inside not in (None, "."):
        skip |= {f"{inside}/{REVIEW_FILE}", f"{inside}/{REVIEW_MD}"}
    actual = file_table(tree.root, skip=frozenset(skip))
    diff = compare_tables(m.files, actual)
    if diff.same:
        checks.add(
            SUBMISSION, "files", True, f"the {len(actual)} files the manifest lists, byte for byte, and no other"
        )
    else:
        parts = [
            _names(label, names)
            for label, names in (("missing", diff.missing), ("extra", diff.extra), ("changed", diff.changed))
            if names
        ]
        checks.add(SUBMISSION, "files", False, f"{tree.rel(tree.manifest)} lists other files: " + "; ".join(parts))
    return actual


def _layout(checks: _Checks, tree: Tree, m: SubmissionManifest) -> list[PointEntry]:
    """The manifest's points whose folders are where the layout puts them (a manifest naming
    other paths could lead the review outside the tree)."""
    good: list[PointEntry] = []
    problems: list[str] = []
    for p in m.points:
        sc = tree.scenario(scenario_name(p.concurrency))
        if p.scenario != sc.name or p.path != tree.rel(sc.dir) or p.run != tree.rel(sc.run):
            problems.append(f"point c{p.concurrency}: its folders are not {tree.rel(sc.dir)} and {tree.rel(sc.run)}")
        elif not sc.run.is_dir():
            problems.append(f"{p.run}: missing")
        else:
            good.append(p)
    listed = {p.scenario for p in m.points}
    if tree.results.is_dir():
        problems += [
            f"{tree.rel(d)}: a scenario folder the manifest does not list"
            for d in sorted(tree.results.iterdir())
            if d.name not in listed
        ]
    if m.system_file != tree.rel(tree.system_file):
        problems.append(f"system_file {m.system_file!r} is not {tree.rel(tree.system_file)}")
    if len({p.concurrency for p in m.points}) != len(m.points):
        problems.append("two points have the same concurrency")
    if not m.points:
        problems.append("no points")
    checks.add(
        SUBMISSION,
        "layout",
        not problems,
        "; ".join(problems) or f"{len(m.points)} point(s) under {tree.rel(tree.results)}",
    )
    return good


def _point(
    checks: _Checks,
    tree: Tree,
    m: SubmissionManifest,
    p: PointEntry,
    actual: dict[str, FileEntry],
    shards: str | Path | None,
) -> None:
    sc = tree.scenario(p.scenario)
    here = p.path
    try:
        fresh = recompute(sc.run)
        scores = Scores.read(sc.run)
        osl = OslResult.read(sc.run)
        inline = score(open_run(sc.run, shards), default_rules()).score
    except (EvalError, traces.ContractError) as exc:
        checks.add(here, "run-folder", False, f"{exc}; the point cannot be reviewed")
        return
    # the run's own summary is verified by the compliance lines (seal, recomputed): each checker's
    # copy must be that file, byte for byte
    stored_file = run_summary_file(sc.run)
    try:
        stored_bytes = stored_file.read_bytes()
    except OSError:
        stored_bytes = b""  # the compliance check's `recomputed` line names the missing file
    problems = []
    for copy in (sc.summary, sc.run1_summary):
        try:
            same = copy.read_bytes() == stored_bytes
        except OSError:
            problems.append(f"{tree.rel(copy)}: missing")
            continue
        if not same:
            problems.append(f"{tree.rel(copy)}: not a byte copy of {tree.rel(stored_file)}")
    differences = headline_differences(
        p.headline,
        headline(fresh, inline, osl.window.mean),
        tree.rel(tree.manifest),
        f"points[c{p.concurrency}].headline",
    )
    problems += [d.text() for d in differences[:SHOWN_FILES]]
    if len(differences) > SHOWN_FILES:
        problems.append(f"and {len(differences) - SHOWN_FILES} more")
    checks.add(
        here,
        "copies",
        not problems,
        "; ".join(problems)
        or "the checker's copies of result_summary.json are the run's, and the manifest's numbers are what the "
        "records give",
    )
    # submit writes the accuracy file of a complete run: the compliance lines judge completeness
    _reference_files(checks, tree, p, fresh, stored_bytes, scores.score, True)
    findings = check_scenario(tree, sc, null_keys(fresh.summary))
    failed = [f.text() for f in findings if not f.passed]
    notes = accepted(findings)
    checks.add(
        here,
        "checker-fields",
        not failed,
        "; ".join(failed)
        or "every field the MLPerf checker reads is there" + (f" (accepted: {'; '.join(notes)})" if notes else ""),
    )
    problems = []
    info = fresh.info
    if info.concurrency != p.concurrency:
        problems.append(f"run.json concurrency {info.concurrency}, the manifest says {p.concurrency}")
    if info.started_at != p.started_at:
        problems.append(f"run.json started_at {info.started_at}, the manifest says {p.started_at}")
    if info.target != p.target:
        problems.append(f"run.json target {info.target!r}, the manifest says {p.target!r}")
    if info.profile != m.profile:
        problems.append(f"run.json profile {info.profile}, the submission's is {m.profile}")
    if info.dataset.content_hash != m.dataset_hash:
        problems.append(
            f"run.json dataset hash {info.dataset.content_hash[:16]}…, the submission's is {m.dataset_hash[:16]}…"
        )
    digest = folder_digest(actual, p.run)
    if digest != p.run_digest:
        problems.append(f"the files of {p.run} digest to {digest[:16]}…, the manifest says {p.run_digest[:16]}…")
    seal = sc.run / SEAL_FILE
    seal_sha = traces.sha256_file(seal) if seal.is_file() else None
    if seal_sha != p.seal_sha256:
        problems.append(f"{p.run}/{SEAL_FILE} sha256 {seal_sha}, the manifest says {p.seal_sha256}")
    checks.add(
        here,
        "manifest-entry",
        not problems,
        f"{tree.rel(tree.manifest)}: "
        + ("; ".join(problems) if problems else "the point's entry matches its run folder"),
    )


def _reference_files(
    checks: _Checks,
    tree: Tree,
    p: PointEntry,
    fresh: Recomputed,
    stored_bytes: bytes,
    inline_score: float | None,
    complete: bool,
) -> None:
    """config.yaml and accuracy_results.json as the run folder makes them, byte for byte."""
    sc = tree.scenario(p.scenario)
    try:
        stored = json.loads(stored_bytes) if stored_bytes else {}
    except ValueError:
        stored = {}
    want = {
        sc.config: reference_config(fresh.info, seeds_of(stored)).text(),
        sc.accuracy: accuracy_results(fresh.info, inline_score, fresh.records, complete=complete).text(),
    }
    differ = []
    for path, text in want.items():
        try:
            same = path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            differ.append(tree.rel(path))
    checks.add(
        p.path,
        "reference-files",
        not differ,
        f"{', '.join(differ)}: not what the run folder makes (run.json, scores.json, the records)"
        if differ
        else "config.yaml and accuracy_results.json are what the run folder makes",
    )


def _compliance(
    checks: _Checks,
    tree: Tree,
    m: SubmissionManifest,
    points: Sequence[PointEntry],
    *,
    expected_hash: str | None,
    registry: str | Path | None,
    shards: str | Path | None,
) -> None:
    """`trajbench eval check` over the copied run folders, each line under its point."""
    where = {str(tree.scenario(p.scenario).run): p.path for p in points}
    swe = [tree.root / r.path for r in (m.swebench.runs if m.swebench else [])]
    readable = []
    for p in points:
        try:
            replay.read_run_info(tree.scenario(p.scenario).run)
            readable.append(tree.scenario(p.scenario).run)
        except replay.ReplayError as exc:
            checks.add(p.path, "compliance", False, str(exc))
    if not readable:
        return
    kwargs = {
        "swebench": swe,
        "expected_hash": expected_hash,
        "profile": m.profile,
        "registry": registry,
        "shards": shards,
    }
    try:
        found = check_submission(readable, **kwargs)  # type: ignore[arg-type]
    except EvalError:
        found = []
        for run in readable:  # which run breaks the check, and the others' lines
            try:
                found += [c for c in check_submission([run], **kwargs) if c.point != SUBMISSION]  # type: ignore[arg-type]
            except EvalError as exc:
                checks.add(where[str(run)], "compliance", False, str(exc))
    for c in found:
        checks.add(where.get(c.point, c.point), c.check, c.passed, c.reason)


def _submission_checks(
    checks: _Checks, tree: Tree, m: SubmissionManifest, *, expected_hash: str | None, registry: str | Path | None
) -> None:
    findings = check_submitter(tree)
    failed = [f.text() for f in findings if not f.passed]
    checks.add(
        SUBMISSION, "checker-fields", not failed, "; ".join(failed) or "systems/ and src/ as the checker wants them"
    )
    want: str | None = expected_hash
    source = "--expected-hash"
    if want is None:
        prof = traces.profiles().get(m.profile)
        if prof is None:
            want, source = None, f"unknown profile {m.profile}"
        else:
            try:
                want, source = expected_hash_of(prof, registry)
            except traces.TraceError as exc:
                want, source = None, str(exc)
    if want is None:
        checks.add(
            SUBMISSION, "official-dataset", False, f"no official hash to compare with ({source}); pass --expected-hash"
        )
    else:
        same = m.dataset_hash == want
        checks.add(
            SUBMISSION,
            "official-dataset",
            same,
            f"{tree.rel(tree.manifest)}: dataset hash {m.dataset_hash[:16]}… "
            + ("is the official one" if same else f"is not the official {want[:16]}… ({source})"),
        )
    if m.swebench is None:
        return  # the compliance check's swebench line says what is missing
    try:
        mean = swebench_mean([str(tree.root / r.path) for r in m.swebench.runs])
    except SwebenchError as exc:
        checks.add(SUBMISSION, "swebench-manifest", False, str(exc))
        return
    stored = [(r.score, r.resolved, r.instances, r.incomplete) for r in m.swebench.runs]
    fresh = [(s, res, n, inc) for _, s, res, n, inc in mean.runs]
    same = stored == fresh and m.swebench.mean == mean.mean
    checks.add(
        SUBMISSION,
        "swebench-manifest",
        same,
        f"the mean {mean.mean} of {len(mean.runs)} run(s) is the manifest's"
        if same
        else f"{tree.rel(tree.manifest)}: swebench mean {m.swebench.mean} and runs {stored}, the copies give {mean.mean} and {fresh}",
    )


def _previous(checks: _Checks, previous: Path, m: SubmissionManifest) -> Changes | None:
    try:
        old = SubmissionManifest.read(previous)
    except traces.ContractError as exc:
        checks.add(SUBMISSION, "previous", False, f"{exc}; pass the previous submission tree as --previous")
        return None
    mine = (m.division, m.submitter, m.system, m.benchmark)
    theirs = (old.division, old.submitter, old.system, old.benchmark)
    if mine != theirs:
        checks.add(
            SUBMISSION,
            "previous",
            False,
            f"the previous submission is of {'/'.join(theirs)}, this one of {'/'.join(mine)}; a rolling submission "
            "keeps its division, submitter, system and benchmark",
        )
        return None
    changes = compare(old, m)
    checks.add(
        SUBMISSION,
        "previous",
        True,
        f"against {old.submission_date}: {len(changes.added)} added, {len(changes.removed)} removed, "
        f"{len(changes.unchanged)} unchanged",
    )
    by_point: dict[str, list[str]] = {}
    for c in changes.changed:
        by_point.setdefault(c.scenario, []).append(f"{c.key} {c.before} -> {c.after}")
    for path, items in sorted(by_point.items()):
        checks.add(
            path,
            "published-numbers",
            False,
            f"published on {old.submission_date} with other numbers: {'; '.join(items)}; a published point "
            "cannot change (submit a new concurrency, or withdraw the point)",
        )
    return changes


def review(
    tree_dir: str | Path,
    *,
    previous: str | Path | None = None,
    out: str | Path | None = None,
    expected_hash: str | None = None,
    registry: str | Path | None = None,
    shards: str | Path | None = None,
) -> ReviewResult:
    """Review the submission tree `tree_dir`; write review.json and review.md into `out` (default:
    the tree's root). The result's report says whether it passed; the files are written either way."""
    root = Path(tree_dir)
    if not root.is_dir():
        raise EvalError(f"{root}: not a folder; pass the root of a tree `trajbench submit` wrote")
    out_dir = Path(out) if out is not None else root
    traces.check_writable(out_dir, option="--out", error=EvalError)
    checks = _Checks()
    manifest: SubmissionManifest | None = None
    changes: Changes | None = None
    try:
        manifest = SubmissionManifest.read(root)
    except traces.ContractError as exc:
        checks.add(SUBMISSION, "manifest", False, f"{exc}; the tree was not written by `trajbench submit`")
    if manifest is not None:
        tree = _tree(checks, root, manifest)
        if tree is not None:
            actual = _files(checks, tree, manifest, out_dir)
            points = _layout(checks, tree, manifest)
            _submission_checks(checks, tree, manifest, expected_hash=expected_hash, registry=registry)
            for p in points:
                _point(checks, tree, manifest, p, actual, shards)
            if points:
                _compliance(
                    checks, tree, manifest, points, expected_hash=expected_hash, registry=registry, shards=shards
                )
            if previous is not None:
                changes = _previous(checks, Path(previous), manifest)
    digest = traces.sha256_file(root / SubmissionManifest.FILE) if manifest is not None else ""
    report = report_of(manifest, _ordered(checks.items), changes, digest)
    traces.make_dir(out_dir, option="--out", error=EvalError)
    json_path = report.write(out_dir)
    md_path = out_dir / REVIEW_MD
    tmp = md_path.with_name(f".{md_path.name}.tmp-{os.getpid()}")
    tmp.write_text(markdown(report), encoding="utf-8")
    os.replace(tmp, md_path)
    return ReviewResult(report, json_path, md_path)


def _tree(checks: _Checks, root: Path, m: SubmissionManifest) -> Tree | None:
    try:
        if m.division not in DIVISIONS:
            raise EvalError(f"division {m.division!r} is not one of {', '.join(DIVISIONS)}")
        for option, value in (("submitter", m.submitter), ("system", m.system), ("benchmark", m.benchmark)):
            check_name(option, value)
    except EvalError as exc:
        checks.add(SUBMISSION, "manifest", False, f"{root / m.FILE}: {exc}")
        return None
    checks.add(SUBMISSION, "manifest", True, f"{m.FILE}: {m.division}/{m.submitter}/{m.system}/{m.benchmark}")
    return Tree(root, m.division, m.submitter, m.system, m.benchmark)


def _ordered(items: Sequence[ReviewCheck]) -> list[ReviewCheck]:
    """Submission-wide checks first, then each point's in folder order (stable within)."""
    return sorted(items, key=lambda c: (c.point != SUBMISSION, c.point))
