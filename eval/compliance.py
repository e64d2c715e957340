"""The compliance check of a submission (docs/compliance.md): is every run directory an official point?

Each run folder is checked for: a built-in profile unchanged since the run (a user profile's
gates are its author's, docs/maintainers.md), a real target (never trajbench's simulator), gate files judged
by the official gates (never research gates, docs/accuracy.md), salt mode mlperf,
delays on, stop-issuing off, a trajectory count that is a positive multiple of the dataset size
(and every one of them started), the profile's request parameters unchanged, inline and OSL
gates passing, and the dataset's content hash equal to the official one (the package's registry
for a built-in profile, the user registry `traces publish` writes for any other), recomputed from the
shard files and rows rather than read from the manifest (a rewritten shard must not pass as the
official dataset). The submission as a whole needs SWE-bench: 4 runs (one per mandatory
concurrency region) of 200 instances each whose mean meets the profile's threshold, and the
agentic audits (eval.audits, docs/audits.md) each give a line per point, same-model one for the
submission. Every check gives a reason a submitter can act on; nothing here sends a request.

Nothing a run folder claims is taken on trust (`eval.verification`): the folder must be as its
seal says, the run complete, every stored number equal to its recomputation from the records,
its failures within the point's budget, and its output tokens counted by the client. Every count
a check takes from the shards is counted in their rows (`eval.plan`), never read from the
manifest's `counts`, and the salts are checked in the rows too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

import traces
from replay import RunInfo

from .audits import audit_runs
from .checks import Check
from .errors import EvalError
from .gates import MODE_NAMES
from .inline import score
from .osl import osl_of
from .plan import ShardPlan, shard_plan
from .rules import default_rules
from .rundir import Run, open_run
from .swebench import REGION_RUNS, SwebenchError, swebench_mean
from .verdicts import research_gates
from .verification import verification_checks

#: Body fields that are not sampling parameters of the profile (set per turn or by the client).
_NOT_SAMPLING = frozenset({"model", "messages", "tools", "stream", "stream_options"})


def official_hash(profile: str) -> str | None:
    """The package's official hash of a built-in profile's dataset (eval/data/official.json)."""
    raw = json.loads(resources.files("eval").joinpath("data/official.json").read_text("utf-8"))
    known: str | None = raw["content_hashes"].get(profile)
    return known


def expected_hash_of(prof: traces.Profile, registry: str | Path | None) -> tuple[str | None, str]:
    """The hash a run of `prof` must replay, and where it comes from: the package's registry for
    a built-in, the user registry (--registry, TRAJBENCH_REGISTRY) for any other profile."""
    if prof.built_in:
        return official_hash(prof.name), "eval/data/official.json"
    where = traces.registry_path(registry)
    if where is None:
        return None, f"no user registry (--registry FILE or {traces.REGISTRY_ENV})"
    return traces.registered_hash(where, prof.name), f"the registry {where}"


def check_submission(
    run_dirs: Sequence[str | Path],
    *,
    swebench: Sequence[str | Path] = (),
    expected_hash: str | None = None,
    profile: str | None = None,
    registry: str | Path | None = None,
    shards: str | Path | None = None,
) -> list[Check]:
    """Every check of every run folder, then the submission-wide SWE-bench check. Without
    `expected_hash`, the dataset's hash is looked up by profile (`expected_hash_of`); `shards`
    replaces the shard folder run.json names (a reviewer's copy of the dataset)."""
    if not run_dirs:
        raise EvalError("no run folder given; pass the run directories of every Pareto point")
    checks: list[Check] = []
    profiles_seen: set[str] = set()
    verified: dict[Path, traces.Verification | traces.ShardError] = {}  # runs of a sweep share shards
    plans: dict[Path, ShardPlan | None] = {}
    for d in run_dirs:
        run = open_run(d, shards)
        name = profile or run.profile_name or ""
        profiles_seen.add(name)
        checks.extend(_check_run(run, name, expected_hash, verified, registry, plans))
    name = profile or (profiles_seen.pop() if len(profiles_seen) == 1 else "")
    if not name:
        checks.append(
            Check(
                "submission",
                "profile",
                False,
                "the runs use different profiles; a submission is one model (pass --profile)",
            )
        )
    checks.append(_check_swebench(swebench, name))
    checks.extend(Check(a.point, a.audit, a.passed, a.reason) for a in audit_runs(run_dirs, swebench=swebench))
    return checks


def _check_run(
    run: Run,
    name: str,
    expected_hash: str | None,
    verified: dict[Path, traces.Verification | traces.ShardError],
    registry: str | Path | None = None,
    plans: dict[Path, ShardPlan | None] | None = None,
) -> list[Check]:
    point = str(run.path)  # as the user gave it: two sweeps may both have a folder "c4"
    cfg = run.config
    out: list[Check] = []
    plan = _plan(run.shards, verified, {} if plans is None else plans)

    def add(check: str, passed: bool, reason: str) -> None:
        out.append(Check(point, check, passed, reason))

    prof = run.profile if name == run.profile_name else traces.profiles().get(name)
    if prof is None:
        add(
            "profile",
            False,
            f"unknown profile {name!r}; choose one of {', '.join(traces.profiles())} "
            "(or load a user profile with --profiles FILE)",
        )
        return out
    out.append(_check_profile(run, prof, point))
    out.append(_check_target(cfg, point))
    out.append(_check_gates(run, point))
    if run.profile_name != name:
        add("profile", False, f"run.json profile is {run.profile_name!r}, the submission's is {name!r}")
    out.append(_check_salt(cfg, plan, point))
    delays = cfg.inject_delays
    add(
        "delays",
        delays,
        "recorded delays injected"
        if delays
        else f"inject_delays is {delays!r}; official runs inject delays (drop --no-delays)",
    )
    stop = cfg.stop_issuing_on_first_user_complete
    add(
        "stop-issuing",
        not stop,
        "started trajectories run to the end"
        if not stop
        else f"stop_issuing_on_first_user_complete is {stop!r}; official runs need false",
    )
    out.append(_check_trajectories(run, point, plan))
    out.append(_check_sampling(cfg, prof, point))
    dataset = _check_hash(run, prof, expected_hash, point, verified, registry)
    if plan is None:  # its rows cannot be trusted, or read
        out += [
            Check(point, check, False, "not scored: the shards do not match their manifest (see the dataset check)")
            for check in ("inline", "osl")
        ]
        out.append(dataset)
        out += verification_checks(run, point, None)
        return out
    scores = score(run, default_rules())
    thr = scores.threshold
    if thr is None:
        add("inline", False, f"profile {name} has no official inline threshold")
    else:
        add(
            "inline",
            bool(scores.passed),
            f"score {_pct(scores.score)} vs >= {_pct(thr)} over {scores.turns.scored} turns "
            f"({scores.turns.missing} missing)",
        )
    osl = osl_of(run, name)  # the run's own profile when name is the run's
    add("osl", osl.passed is True, osl.reason)
    out.append(dataset)
    out += verification_checks(run, point, plan, scores=scores, osl=osl)
    return out


def _plan(
    shards: traces.Shards,
    verified: dict[Path, traces.Verification | traces.ShardError],
    cache: dict[Path, ShardPlan | None],
) -> ShardPlan | None:
    """The shards' plan from their rows (eval.plan), once per folder; None when the shards do
    not match their manifest (their rows are nobody's dataset) or cannot be read."""
    key = shards.path.resolve()
    if key not in cache:
        plan = None
        if not isinstance(_verify(shards, verified), traces.ShardError):
            try:
                plan = shard_plan(shards)
            except traces.ShardError:
                plan = None
        cache[key] = plan
    return cache[key]


def _check_salt(cfg: RunInfo, plan: ShardPlan | None, point: str) -> Check:
    """Salting in the official form: run.json says mlperf, and the rows the run replayed hold the
    mlperf salts of their trajectory and repeat (the manifest's options are outside the content
    hash, the rows are not)."""
    salt = cfg.salt
    if salt != "mlperf":
        return Check(
            point, "salt", False, f"salt mode {salt!r}; official runs need mlperf (rebuild shards with --salt mlperf)"
        )
    if plan is None:
        return Check(point, "salt", True, "salt mode 'mlperf' (the rows are judged by the dataset check)")
    wrong = [
        i
        for i in plan.instances
        if (want := traces.make_salt("mlperf", i.trajectory_id, i.repeat))
        and (i.salt_repeat, i.salt_conversation) != (want.repeat, want.conversation)
    ]
    if wrong:
        first = wrong[0]
        return Check(
            point,
            "salt",
            False,
            f"run.json says salt mode 'mlperf', but {len(wrong)} of {len(plan.instances)} stored instances do not "
            f"hold the mlperf salts (e.g. {first.instance_id}: [{first.salt_repeat}]/[{first.salt_conversation}]); "
            "rebuild the shards with --salt mlperf",
        )
    return Check(point, "salt", True, f"salt mode 'mlperf', in the rows of all {len(plan.instances)} stored instances")


def _check_profile(run: Run, prof: traces.Profile, point: str) -> Check:
    """Only a built-in profile makes an official point (a user profile's thresholds are its
    author's, docs/maintainers.md), and only as the package defines it: run.json records the
    profile's hash, so a run made with another version of it is seen."""
    # the recorded hash is of the profile the run used; `eval check --profile X` on a run of
    # another profile is the `profile` check's finding, not a version difference
    recorded = run.config.profile_hash if run.profile_name == prof.name else None
    if not prof.built_in:
        changed = (
            f"; the loaded file's version differs from the one the run recorded (hash {recorded[:16]}…)"
            if recorded is not None and recorded != prof.content_hash()
            else ""
        )
        return Check(
            point,
            "official-profile",
            False,
            f"profile {prof.name} is a user profile ({prof.source}), not a built-in one: its gates are its author's, "
            f"so the point is not an official result (official profiles ship with trajbench: `trajbench profiles`)"
            + changed,
        )
    if recorded is not None and recorded != prof.content_hash():
        return Check(
            point,
            "official-profile",
            False,
            f"run.json's profile {prof.name} (hash {recorded[:16]}…) differs from this trajbench's "
            f"({prof.content_hash()[:16]}…); rerun the point with this trajbench",
        )
    return Check(point, "official-profile", True, f"built-in profile {prof.name}")


def _check_target(cfg: RunInfo, point: str) -> Check:
    """A point measured against the simulator (embedded, or a standalone `serve-sim` recognised
    by what it says about itself) is never official. run.json's `target` is judged against the
    evidence it records beside it: the embedded simulator's settings, and how a simulated target
    was recognised, are never there for a real one."""
    target = cfg.target
    if target == "real":
        evidence = [
            "simulator (the settings of the embedded simulator the run started)" if cfg.simulator is not None else "",
            f"target_evidence {cfg.target_evidence!r}" if cfg.target_evidence is not None else "",
        ]
        said = [e for e in evidence if e]
        if said:
            return Check(
                point,
                "target",
                False,
                f"run.json says target 'real' but records a simulated one: {'; '.join(said)}; "
                "official points need a real inference server",
            )
        return Check(point, "target", True, "a real inference server")
    if target == "simulated":
        how = cfg.target_evidence or "run.json says so"
        return Check(
            point,
            "target",
            False,
            f"measured against trajbench's simulator ({how}); official points need a real inference server",
        )
    return Check(point, "target", False, f"run.json target is {target!r}, not 'real'; rerun with a current trajbench")


def _check_gates(run: Run, point: str) -> Check:
    """A point whose scores.json or osl.json was judged by research gates is not official, even
    though this check recomputes both gates the official way: its files (and so its report)
    say otherwise."""
    research = research_gates(run.path)
    if research:
        which = ", ".join(f"{name} by {MODE_NAMES.get(mode, mode)} gates" for name, mode in sorted(research.items()))
        return Check(
            point,
            "gates",
            False,
            f"judged by research gates ({which}), which never make an official point; rejudge it with the official "
            f"gates: `trajbench eval inline {point}` and `trajbench eval osl {point}` (default --gates official, "
            "docs/accuracy.md)",
        )
    if run.profile is not None and not run.profile.built_in:
        return Check(
            point, "gates", True, "judged by the profile's gates (a user profile's: its author's, not official)"
        )
    return Check(point, "gates", True, "judged by the official gates (the profile's threshold and band)")


def _check_trajectories(run: Run, point: str, plan: ShardPlan | None) -> Check:
    """The dataset's size is counted in its rows (eval.plan), never read from the manifest's
    `counts`, which the content hash does not cover."""
    if plan is None:
        return Check(
            point, "trajectories", False, "not judged: the shards do not match their manifest (see the dataset check)"
        )
    size = plan.trajectories
    n = run.config.num_trajectories
    if n <= 0 or n % size:
        return Check(
            point, "trajectories", False, f"{n} trajectories is not a positive multiple of the dataset size {size}"
        )
    started = len({r.instance_id for r in run.records()})
    if started < n:
        return Check(
            point, "trajectories", False, f"{started} of {n} trajectory instances were started; the run did not finish"
        )
    return Check(
        point, "trajectories", True, f"{n} = {n // size} x {size} (the dataset's trajectories, counted in its rows)"
    )


def _check_sampling(cfg: RunInfo, prof: traces.Profile, point: str) -> Check:
    sent = cfg.request_params
    want = prof.request_params()
    got = {k: v for k, v in sent.items() if k not in _NOT_SAMPLING}
    diffs = [f"{k}={got.get(k)!r} (profile: {want[k]!r})" for k in sorted(want) if got.get(k) != want[k]]
    diffs += [f"{k}={got[k]!r} is not in the profile" for k in sorted(got) if k not in want]
    if diffs:
        return Check(point, "sampling", False, "; ".join(diffs))
    return Check(point, "sampling", True, f"equal to profile {prof.name}")


def _verify(
    shards: traces.Shards, cache: dict[Path, traces.Verification | traces.ShardError]
) -> traces.Verification | traces.ShardError:
    key = shards.path.resolve()
    if key not in cache:
        try:
            cache[key] = traces.verify_shards(shards, content=True)
        except traces.ShardError as exc:
            cache[key] = exc
    return cache[key]


def _check_hash(
    run: Run,
    prof: traces.Profile,
    expected_hash: str | None,
    point: str,
    verified: dict[Path, traces.Verification | traces.ShardError],
    registry: str | Path | None,
) -> Check:
    """The dataset check: the shards as they are now re-hashed (files and rows), the hash the run
    recorded, the expected official hash, and the run's own check of its shards at start."""
    result = _verify(run.shards, verified)
    if isinstance(result, traces.ShardError):
        return Check(point, "dataset", False, f"the shards do not match their manifest: {result}")
    actual = result.content_hash or ""
    if not run.config.shard_verification.verified:
        return Check(
            point,
            "dataset",
            False,
            "run.json records no check of the shard files before the run; rerun the point with this trajbench, which verifies the shards before the first request",
        )
    claimed = run.config.dataset.content_hash
    if claimed != actual:
        return Check(
            point,
            "dataset",
            False,
            f"run.json content_hash {claimed[:16]}… differs from the shards' {actual[:16]}…; the shards changed after the run",
        )
    if expected_hash is not None:
        want: str | None = expected_hash
        source = "--expected-hash"
    else:
        try:
            want, source = expected_hash_of(prof, registry)
        except traces.TraceError as exc:
            return Check(point, "dataset", False, str(exc))
    if want is None:
        if prof.built_in:
            return Check(
                point,
                "dataset",
                False,
                f"no official hash known for {prof.name}: this trajbench's eval/data/official.json has none yet; "
                "pass --expected-hash HASH, the content hash published with the official dataset (its release's "
                "registry.json), see docs/submitting.md",
            )
        return Check(
            point,
            "dataset",
            False,
            f"no published hash known for {prof.name} in {source}; pass --expected-hash, or --registry FILE "
            "(written by `trajbench traces publish`, docs/maintainers.md)",
        )
    if actual != want:
        return Check(point, "dataset", False, f"content hash {actual[:16]}… is not the expected {want[:16]}…")
    return Check(
        point,
        "dataset",
        True,
        f"content hash {actual[:16]}… as expected (recomputed from {result.files} shard file(s))",
    )


def _check_swebench(dirs: Sequence[str | Path], name: str) -> Check:
    """docs/accuracy.md via eval.swebench's own mean: any note (run count, instances, incomplete
    instances, runtime) makes the runs non-official, so it fails the check."""
    if not dirs:
        return Check(
            "submission",
            "swebench",
            False,
            f"no SWE-bench results; pass --swebench DIR for each of the {REGION_RUNS} region runs",
        )
    try:
        mean = swebench_mean([str(d) for d in dirs])
    except SwebenchError as exc:
        return Check("submission", "swebench", False, str(exc))
    problems = list(mean.notes)
    if mean.profile != name:
        problems.insert(0, f"SWE-bench runs are for profile {mean.profile}, the submission is {name or '?'}")
    if mean.threshold is not None and not mean.passed:
        problems.append(f"mean {_pct(mean.mean)} < {_pct(mean.threshold)}")
    if problems:
        return Check("submission", "swebench", False, "; ".join(problems))
    return Check(
        "submission", "swebench", True, f"mean {_pct(mean.mean)} >= {_pct(mean.threshold)} over {len(mean.runs)} runs"
    )


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def compliance_json(checks: list[Check]) -> dict[str, Any]:
    """The machine-readable form (`eval check --json`)."""
    return {
        "passed": all(c.passed for c in checks),
        "failed": sum(not c.passed for c in checks),
        "checks": [asdict(c) for c in checks],
    }


def compliance_lines(checks: list[Check]) -> list[str]:
    """The checks for people, at 80 columns: each point's folder on a line of its own, then one
    check a line (`pass` or `FAIL`, its name, the reason wrapped under itself), the failures of a
    point first so that they are the lines read."""
    width = max((len(c.check) for c in checks), default=0)
    out: list[str] = []
    points = list(dict.fromkeys(c.point for c in checks))
    for point in points:
        mine = [c for c in checks if c.point == point]
        failed = sum(not c.passed for c in mine)
        out.append(
            f"{point}: {failed} of {len(mine)} checks failed" if failed else f"{point}: all {len(mine)} checks pass"
        )
        for c in sorted(mine, key=lambda c: c.passed):  # stable: the failures, then the passes, each in check order
            out += traces.field_lines(
                f"{'pass' if c.passed else 'FAIL'}  {c.check}", c.reason, label_width=6 + width, indent=2
            )
    return out
