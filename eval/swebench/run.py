"""`trajbench eval swebench`: the standalone SWE-bench Verified run (docs/accuracy.md), end to end.

The first N instances (dataset order) each get one mini-swe-agent run against the endpoint with
the profile's sampling parameters and template; the swebench harness grades the patches;
score = resolved / N. The run folder holds, per instance, `<id>/trajectory.json`,
`<id>/patch.diff`, `<id>/agent.log`, `<id>/grade.json` (and the local runtime's
`<id>/test_output.txt`), then `swebench_summary.json` and the `swebench` line of `scores.json`.

Resumable by construction: `patch.diff` is written (atomically) only when the agent finished, and
`grade.json` only when the harness settled the instance. `--resume` skips graded instances,
grades those with a patch and reruns the agent on the rest. Ctrl-C stops handing out instances,
stops running agents before their next step (those instances stay incomplete; a second Ctrl-C
abandons them at once) and writes the summary of what is done.
An instance without a grade is `incomplete`: reported as such, never counted as resolved.

This module imports neither mini-swe-agent nor swebench at the top: `import eval` works without
the extra, and a missing extra is an error that says what to install.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import traces
from replay import EngineIdentity

from . import deps
from .dataset import load_instances
from .errors import SwebenchError
from .instances import InstanceRunner
from .progress import Reporter
from .summary import (
    GRADE_FILE,
    PATCH_FILE,
    Provenance,
    SwebenchSummary,
    build_summary,
    instance_dir,
    write_json,
    write_results,
)
from .templates import TEMPLATES

Echo = Callable[[str], None]

RUNTIMES = {
    "docker": "per-instance SWE-bench containers (the official runtime; needs a Docker engine)",
    "local": "temporary copies of local task repositories; NOT isolated (tests, air-gapped trials)",
}
CONFIG_FILE = "swebench_config.json"
# what a resumed run must share with the run it continues
RESUME_KEYS = ("profile", "model", "runtime", "instances", "step_limit")


@dataclass(frozen=True)
class SwebenchOptions:
    dataset: str
    endpoint: str
    profile: str
    out: str
    instances: int = 200
    workers: int = 1
    runtime: str = "docker"
    repos: str | None = None  # local runtime: folder of task repositories
    resume: bool = False
    model: str | None = None  # served model name, if not the profile's
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int | None = None  # the replay concurrency (Pareto point) this run accompanies
    step_limit: int | None = None  # None: mini-swe-agent's SWE-bench config (250)
    test_timeout: int = 1800  # seconds per instance's tests, the harness default


def run_swebench(opts: SwebenchOptions, *, echo: Echo = print, reporter: Reporter | None = None) -> SwebenchSummary:
    """Run (or resume) a SWE-bench run; returns the summary it wrote."""
    reporter = reporter or Reporter()
    _check_options(opts)
    profile = traces.get_profile(opts.profile)
    if profile.swebench_template not in TEMPLATES:
        raise SwebenchError(
            f"profile {profile.name}: unknown swebench_template {profile.swebench_template!r}; known: {', '.join(TEMPLATES)}"
        )
    deps.require()
    instances = load_instances(opts.dataset, opts.instances)
    out = Path(opts.out)
    _check_out(out, opts)
    if opts.runtime == "docker":
        from . import docker

        docker.check_engine()
    else:
        from .local import NOT_ISOLATED

        echo(NOT_ISOLATED)
    from . import agent as agent_mod

    served = opts.model or profile.served_model_name
    engine = _engine_identity(opts, out)
    config = agent_mod.agent_config(
        endpoint=opts.endpoint,
        served_model=served,
        request_params=profile.request_params(),
        template=profile.swebench_template,
        step_limit=opts.step_limit,
    )
    traces.make_dir(out, error=SwebenchError)
    ids = [i["instance_id"] for i in instances]
    versions = deps.versions()
    provenance = Provenance(
        model=served,
        endpoint=opts.endpoint,
        template=profile.swebench_template,
        isolated=opts.runtime == "docker",
        versions=versions,
        workers=opts.workers,
        dataset=Path(opts.dataset).name,
        engine=engine,
    )
    write_json(
        out / CONFIG_FILE,
        {
            **{k: v for k, v in asdict(opts).items()},
            "agent_config": config,
            "versions": versions,
            "engine": traces.to_json(engine),
        },
    )

    runner = InstanceRunner(opts, out, config, served, reporter, echo)
    todo_agent = [i for i in instances if not (instance_dir(out, i["instance_id"]) / PATCH_FILE).is_file()]
    todo_grade = [
        i
        for i in instances
        if (instance_dir(out, i["instance_id"]) / PATCH_FILE).is_file()
        and not (instance_dir(out, i["instance_id"]) / GRADE_FILE).is_file()
    ]
    skipped = len(instances) - len(todo_agent) - len(todo_grade)
    if skipped:
        echo(f"resume: {skipped} instance(s) already graded, {len(todo_grade)} to grade, {len(todo_agent)} to run")
    reporter.start(len(todo_agent), len(todo_grade))
    try:
        runner.run(todo_agent, todo_grade)
    finally:
        summary = build_summary(
            out, ids, profile=profile.name, runtime=opts.runtime, concurrency=opts.concurrency, provenance=provenance
        )
        write_results(out, summary)
    return summary


def _engine_identity(opts: SwebenchOptions, out: Path) -> EngineIdentity:
    """Who the endpoint says it is, as a replay run records it (docs/audits.md: the same-model
    audit compares it with the performance points'); a resumed run must find the same engine."""
    from replay.engine import probe_engine

    identity = probe_engine(opts.endpoint, api_key=os.environ.get(opts.api_key_env) or None)
    found: dict[str, Any] = traces.to_json(identity)
    previous = out / CONFIG_FILE
    if opts.resume and previous.is_file():
        before = json.loads(previous.read_text("utf-8")).get("engine")
        keys = ("engine", "version", "chat_template_sha256")
        if isinstance(before, dict) and any(before.get(k) != found.get(k) for k in keys):
            what = ", ".join(
                f"{k} {before.get(k)!r} -> {found.get(k)!r}" for k in keys if before.get(k) != found.get(k)
            )
            raise SwebenchError(
                f"{out}: --resume must continue against the same engine, but the endpoint now says {what}; "
                "choose a new --out for a run against this engine (docs/audits.md)"
            )
    return identity


def _check_options(opts: SwebenchOptions) -> None:
    if opts.runtime not in RUNTIMES:
        raise SwebenchError(f"unknown runtime {opts.runtime!r}; choose one of {', '.join(RUNTIMES)}")
    if opts.runtime == "local" and not opts.repos:
        raise SwebenchError(
            "--runtime local needs --repos DIR: a folder with a git checkout of each task repository (DIR/<instance_id> or DIR/<owner>__<name>)"
        )
    if opts.instances < 1 or opts.workers < 1:
        raise SwebenchError("--instances and --workers must be at least 1")


def _check_out(out: Path, opts: SwebenchOptions) -> None:
    """A folder may hold other results (a replay run's scores.json); not an earlier SWE-bench run
    unless --resume, and a resumed run must be the same run."""
    previous = out / CONFIG_FILE
    if not previous.is_file():
        return
    if not opts.resume:
        raise SwebenchError(f"{out} already holds a SWE-bench run; pass --resume to continue it, or choose a new --out")
    before = json.loads(previous.read_text("utf-8"))
    changed = [k for k in RESUME_KEYS if before.get(k) != getattr(opts, k)]
    if changed:
        what = ", ".join(f"{k} {before.get(k)!r} -> {getattr(opts, k)!r}" for k in changed)
        raise SwebenchError(
            f"{out}: --resume must continue the same run, but {what}; choose a new --out for a different run"
        )
