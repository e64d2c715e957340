"""`trajbench submit`: the submission tree of a system's Pareto points (docs/submission.md).

From sweep and run folders: the points that are complete (every planned turn ran, not
interrupted) and judged (scores.json and osl.json written, both gates passing) make the
frontier; each frontier point becomes one scenario folder holding the reference's files where
the MLPerf checker reads them and where the reference's publish_submission.py puts them, the
measurements and README the checker asks for, and the run folder itself, copied whole. The
submitter's system description, the SWE-bench region runs and a manifest of everything complete
the tree. Before anything is written the stored numbers are checked against their recomputation
and every field the checker reads is self-checked; the tree is built beside `--out` and renamed
into place, so a failure leaves no half-written tree.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import replay
import traces

from .errors import EvalError
from .recompute import recompute_dir
from .results import OslResult, Scores
from .rundir import partial_run
from .submission import (
    DIVISIONS,
    FORMAT_VERSION,
    NOT_SUBMITTED,
    SEAL_FILE,
    SUBMISSION_FILE,
    Excluded,
    Finding,
    Headline,
    Measurements,
    PointEntry,
    Recomputed,
    Scenario,
    SubmissionManifest,
    Swebench,
    SwebenchRun,
    SystemDescription,
    Tree,
    accepted,
    accuracy_results,
    check_name,
    check_scenario,
    check_submitter,
    copy_folder,
    file_table,
    folder_digest,
    headline,
    null_keys,
    read_system_file,
    recompute,
    reference_config,
    run_summary_file,
    scenario_name,
    scenario_readme,
    seeds_of,
    src_readme,
)
from .swebench import SwebenchError, swebench_mean
from .verdicts import gate_verdicts


@dataclass(frozen=True)
class SubmitResult:
    tree: Path
    manifest: SubmissionManifest
    #: accepted nulls of the self-check and what the review will say of research or simulated points
    notes: list[str]


def _inside(child: Path, folder: Path) -> bool:
    try:
        return child.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return True  # cannot tell: assume the worst


def _check_out(out: Path, inputs: Sequence[Path], overwrite: bool) -> None:
    for src in inputs:
        if _inside(out, src) or _inside(src, out):
            raise EvalError(f"--out {out}: overlaps the input {src}; choose an --out outside the run and sweep folders")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise EvalError(f"--out {out}: already exists; pass --overwrite to replace a tree `trajbench submit` wrote")
        if not out.is_dir() or (any(out.iterdir()) and not (out / SUBMISSION_FILE).is_file()):
            raise EvalError(
                f"--out {out}: not a submission tree (no {SUBMISSION_FILE}); --overwrite replaces only a tree "
                "`trajbench submit` wrote, so choose another --out"
            )
    traces.check_writable(out, option="--out", error=EvalError)


def _date(value: str | None) -> str:
    if value is None:
        return datetime.now(UTC).date().isoformat()
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise EvalError(f"--date {value!r}: not a date; write it as YYYY-MM-DD, e.g. 2026-05-01") from None


@dataclass(frozen=True)
class _Chosen:
    frontier: list[replay.Point]
    excluded: list[Excluded]


def _exclusion(p: replay.Point) -> str | None:
    """Why a measured point is not a candidate: incomplete, not judged, or failing a gate."""
    partial = partial_run(p.run_dir)
    if partial is not None:
        why = partial.split(" is a partial run: ", 1)[-1].split("; its scores", 1)[0]
        return f"partial run: {why}"
    missing = [
        f"{gate} (`trajbench eval {cmd} {p.run_dir}`)"
        for gate, cmd, judged in (("inline accuracy", "inline", p.inline_pass), ("the OSL gate", "osl", p.osl_pass))
        if judged is None
    ]
    if missing:
        return f"not judged: no verdict of {' or '.join(missing)}"
    if p.inline_pass is False:
        return f"fails the inline gate (score {p.inline_score})"
    if p.osl_pass is False:
        return f"fails the OSL gate (mean {p.osl_mean} tokens per turn)"
    return None


def _choose(points: Sequence[replay.Point], replaced: Sequence[Any]) -> _Chosen:
    excluded = [
        Excluded(Path(r.run_dir).name, r.concurrency, f"replaced by the later run {Path(r.by).name}") for r in replaced
    ]
    candidates: list[replay.Point] = []
    for p in points:
        why = _exclusion(p)
        if why is None:
            candidates.append(p)
        else:
            excluded.append(Excluded(Path(p.run_dir).name, p.concurrency, why))
    front = replay.frontier(candidates)
    on = {id(p) for p in front}
    for p in candidates:
        if id(p) not in on:
            dominating = [q for q in front if q.per_user_tps >= p.per_user_tps and q.throughput_tps >= p.throughput_tps]
            by = min(dominating, key=lambda q: (abs(q.concurrency - p.concurrency), q.concurrency))
            excluded.append(
                Excluded(
                    Path(p.run_dir).name, p.concurrency, f"not on the frontier: {Path(by.run_dir).name} dominates it"
                )
            )
    if not front:
        why = "; ".join(f"{e.source}: {e.reason}" for e in excluded) or "no runs"
        raise EvalError(f"no point can be submitted: {why}")
    return _Chosen(
        sorted(front, key=lambda p: p.concurrency), sorted(excluded, key=lambda e: (e.concurrency, e.source))
    )


@dataclass(frozen=True)
class _Built:
    point: replay.Point
    scenario: Scenario
    fresh: Recomputed
    headline: Headline
    findings: list[Finding]


def _write_point(tree: Tree, p: replay.Point, measurements: Measurements, *, system: str, benchmark: str) -> _Built:
    sc = tree.scenario(scenario_name(p.concurrency))
    # the run folder as the run left it (its seal), and every number in it what its records give
    seal = replay.verify_seal(p.run_dir)
    if not seal.intact:
        raise EvalError(
            f"{p.run_dir}: {seal.reason()}; a run folder edited after the run cannot be submitted: rerun the point"
        )
    numbers = recompute_dir(p.run_dir)
    if not numbers.ok:
        raise EvalError(
            f"{p.run_dir}: {numbers.reason()}; a run folder edited after the run cannot be submitted: rerun the point"
        )
    copy_folder(Path(p.run_dir), sc.run)
    fresh = recompute(sc.run)
    summary_bytes = run_summary_file(sc.run).read_bytes()
    stored = json.loads(summary_bytes)
    scores, osl = Scores.read(sc.run), OslResult.read(sc.run)
    h = headline(fresh, scores.score, osl.window.mean)
    for path in (sc.summary, sc.run1_summary):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(summary_bytes)
    config = reference_config(fresh.info, seeds_of(stored)).text()
    for path in (sc.config, sc.run1_config, sc.accuracy_config):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config, encoding="utf-8")
    accuracy_results(fresh.info, scores.score, fresh.records, complete=True).write(sc.accuracy.parent)
    measurements.write(sc.dir)
    sc.readme.write_text(
        scenario_readme(
            system=system,
            benchmark=benchmark,
            profile=fresh.info.profile,
            source=Path(p.run_dir).name,
            started_at=fresh.info.started_at,
            h=h,
        ),
        encoding="utf-8",
    )
    return _Built(p, sc, fresh, h, check_scenario(tree, sc, null_keys(fresh.summary)))


def _swebench(tree: Tree, dirs: Sequence[Path]) -> Swebench | None:
    if not dirs:
        return None
    copies = []
    for k, d in enumerate(dirs, start=1):
        dst = tree.swebench(k, d.resolve().name)
        dst.parent.mkdir(parents=True, exist_ok=True)
        copy_folder(d, dst)
        copies.append(dst)
    try:
        mean = swebench_mean([str(c) for c in copies])
    except SwebenchError as exc:
        raise EvalError(str(exc)) from None
    runs = [
        SwebenchRun(tree.rel(Path(d)), score, resolved, n, incomplete)
        for d, score, resolved, n, incomplete in mean.runs
    ]
    notes = [n.replace(str(tree.root) + "/", "") for n in mean.notes]
    return Swebench(runs, mean.mean, mean.threshold, mean.passed, notes)


def _seal_digest(run: Path) -> str | None:
    seal = run / SEAL_FILE
    return traces.sha256_file(seal) if seal.is_file() else None


def submit(
    inputs: Sequence[str | Path],
    out: str | Path,
    *,
    submitter: str,
    division: str,
    system_file: str | Path,
    system: str | None = None,
    benchmark: str | None = None,
    swebench: Sequence[str | Path] = (),
    submission_date: str | None = None,
    overwrite: bool = False,
) -> SubmitResult:
    """Build the submission tree at `out` from run and sweep folders `inputs` (docs/submission.md)."""
    if not inputs:
        raise EvalError("no run or sweep folder given; pass the folders of the system's points")
    if division not in DIVISIONS:
        raise EvalError(f"--division {division!r}: choose one of {', '.join(DIVISIONS)}")
    check_name("--submitter", submitter)
    system = check_name("--system", system if system is not None else Path(system_file).stem)
    when = _date(submission_date)
    description, measurements = read_system_file(system_file, submitter=submitter, division=division)
    dirs = [Path(i) for i in inputs]
    swe_dirs = [Path(s) for s in swebench]
    out_path = Path(out)
    _check_out(out_path, [*dirs, *swe_dirs], overwrite)
    try:
        found = replay.collect_points([(system, d) for d in dirs], gates_of=gate_verdicts)
    except replay.ReplayError as exc:
        raise EvalError(str(exc)) from None
    chosen = _choose(found.points, found.replaced)
    profile = chosen.frontier[0].profile
    benchmark = check_name("--benchmark", benchmark if benchmark is not None else profile)
    traces.sweep_stale(out_path)
    tmp = traces.temp_sibling(out_path, "building")
    try:
        manifest, notes = _build(
            Tree(tmp, division, submitter, system, benchmark),
            chosen,
            description,
            measurements,
            swe_dirs,
            when=when,
            profile=profile,
        )
        traces.replace_dir(tmp, out_path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return SubmitResult(out_path, manifest, notes)


def _build(
    tree: Tree,
    chosen: _Chosen,
    description: SystemDescription,
    measurements: Measurements,
    swe_dirs: Sequence[Path],
    *,
    when: str,
    profile: str,
) -> tuple[SubmissionManifest, list[str]]:
    traces.make_dir(tree.root, error=EvalError)
    built = [_write_point(tree, p, measurements, system=tree.system, benchmark=tree.benchmark) for p in chosen.frontier]
    tree.system_file.parent.mkdir(parents=True, exist_ok=True)
    tree.system_file.write_text(description.text(), encoding="utf-8")
    tree.src.mkdir(parents=True, exist_ok=True)
    (tree.src / "README.md").write_text(src_readme(), encoding="utf-8")
    swe = _swebench(tree, swe_dirs)
    findings = [f for b in built for f in b.findings] + check_submitter(tree)
    failed = [f for f in findings if not f.passed]
    if failed:
        lines = "\n".join(f.text() for f in failed[:30])
        more = f"\n… and {len(failed) - 30} more" if len(failed) > 30 else ""
        raise EvalError(
            f"the tree fails its self-check of the MLPerf checker's fields ({len(failed)} problem(s); "
            f"docs/submission.md):\n{lines}{more}"
        )
    notes = [f"self-check accepted {line}" for line in accepted(findings)]
    for b in built:
        if b.point.research:
            notes.append(f"{b.scenario.name}: judged by research gates ({b.point.gates}); the review fails it")
        if b.point.target != "real":
            notes.append(f"{b.scenario.name}: measured against a {b.point.target} target; the review fails it")
    files = file_table(tree.root, skip=NOT_SUBMITTED)
    first = built[0].fresh.info
    points = [
        PointEntry(
            scenario=b.scenario.name,
            path=tree.rel(b.scenario.dir),
            run=tree.rel(b.scenario.run),
            source=Path(b.point.run_dir).name,
            concurrency=b.point.concurrency,
            started_at=b.fresh.info.started_at,
            target=b.fresh.info.target,
            gates=b.point.gates,
            run_digest=folder_digest(files, tree.rel(b.scenario.run)),
            seal_sha256=_seal_digest(b.scenario.run),
            engine=_engine(b.fresh.info),
            headline=b.headline,
        )
        for b in built
    ]
    manifest = SubmissionManifest(
        format_version=FORMAT_VERSION,
        trajbench_version=traces.__version__,
        submission_date=when,
        division=tree.division,
        submitter=tree.submitter,
        system=tree.system,
        benchmark=tree.benchmark,
        profile=profile,
        system_file=tree.rel(tree.system_file),
        dataset_name=first.dataset.name,
        dataset_hash=first.dataset.content_hash,
        points=points,
        excluded=chosen.excluded,
        swebench=swe,
        files=files,
    )
    manifest.write(tree.root)
    return manifest, notes


def _engine(info: replay.RunInfo) -> Any:
    """The engine identity run.json records, when this trajbench records one."""
    engine = getattr(info, "engine", None)
    return None if engine is None else traces.to_json(engine)
