"""The `docker` runtime (official): each instance's agent runs in its SWE-bench container through
mini-swe-agent's Docker environment, and the swebench harness grades the patches in fresh
containers of the same images.

The agent side reuses `minisweagent.run.benchmarks.swebench.get_sb_environment` (image, working
directory /testbed, the config's environment variables). Grading is the harness's own command
line, `python -m swebench.harness.run_evaluation`, run once over every patch still to grade with
the run folder as its working directory (its logs land in `<out>/logs/run_evaluation/<run_id>/`);
each instance's `report.json` becomes its `grade.json`.

No Docker engine, no run: `check_engine()` is called before the first request.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import SwebenchError
from .summary import instance_dir

LOGS = Path("logs") / "run_evaluation"
NO_ENGINE = (
    "the docker runtime runs every instance's agent in its SWE-bench container and grades it with "
    "the swebench harness, both on a Docker engine; start Docker (or point DOCKER_HOST at one), or "
    "for an unisolated trial pass --runtime local --repos DIR"
)


def check_engine() -> None:
    """Fail at once, with what to do, when the docker CLI or a Docker engine is missing."""
    exe = os.getenv("MSWEA_DOCKER_EXECUTABLE", "docker")
    if shutil.which(exe) is None:
        raise SwebenchError(f"no `{exe}` command on PATH (mini-swe-agent starts containers with it): {NO_ENGINE}")
    import docker  # a dependency of swebench

    try:
        docker.from_env(timeout=10).ping()
    except Exception as exc:  # docker-py raises DockerException, requests and OS errors alike
        raise SwebenchError(f"no Docker engine reachable ({exc}): {NO_ENGINE}") from None


def agent_environment(instance: dict[str, Any], config: dict[str, Any]) -> Any:
    """mini-swe-agent's Docker environment for `instance`, started in the harness's image."""
    from minisweagent.run.benchmarks.swebench import get_sb_environment

    # swebench >= 5 names the image in the instance; mini-swe-agent reads it from image_name
    inst = {**instance, "image_name": instance.get("image_name") or instance["image"]}
    env_config = {**config, "environment": {**config.get("environment", {}), "environment_class": "docker"}}
    return get_sb_environment(env_config, inst)


def harness_command(
    *, dataset: Path, predictions: Path, instance_ids: list[str], run_id: str, workers: int, timeout: int
) -> list[str]:
    """The swebench harness invocation that grades `instance_ids` (run with cwd = the run folder)."""
    return [
        sys.executable,
        "-m",
        "swebench.harness.run_evaluation",
        "--dataset_name",
        str(dataset),
        "--split",
        "test",
        "--predictions_path",
        str(predictions),
        "--instance_ids",
        *instance_ids,
        "--max_workers",
        str(workers),
        "--run_id",
        run_id,
        "--timeout",
        str(timeout),
        "--report_dir",
        ".",
    ]


def model_dir_name(model_name: str) -> str:
    """The harness's folder for a model name (run_evaluation.run_instance)."""
    return model_name.replace("/", "__")


def grade(
    out: Path,
    instances: list[dict[str, Any]],
    patches: dict[str, str],
    *,
    model_name: str,
    run_id: str,
    workers: int,
    timeout: int,
    on_graded: Callable[[str, dict[str, Any]], None],
) -> set[str]:
    """Grade the non-empty `patches` with the harness; `on_graded(id, report)` for each instance it
    settles, as soon as its report appears; returns the settled ids."""
    ids = [i["instance_id"] for i in instances if patches.get(i["instance_id"], "").strip()]
    if not ids:
        return set()
    # the harness reads instances and predictions from files; these are the exact inputs it graded
    dataset = out / "harness_instances.jsonl"
    dataset.write_text(
        "".join(json.dumps(i, ensure_ascii=False, default=str) + "\n" for i in instances if i["instance_id"] in ids),
        encoding="utf-8",
    )
    preds = out / "preds.json"
    preds.write_text(
        json.dumps(
            {i: {"instance_id": i, "model_name_or_path": model_name, "model_patch": patches[i]} for i in ids}, indent=2
        ),
        encoding="utf-8",
    )
    cmd = harness_command(
        dataset=dataset.resolve(),
        predictions=preds.resolve(),
        instance_ids=ids,
        run_id=run_id,
        workers=workers,
        timeout=timeout,
    )
    base = out / LOGS / run_id / model_dir_name(model_name)
    settled: set[str] = set()
    with open(out / "harness.log", "ab") as log:
        proc = subprocess.Popen(cmd, cwd=out, stdout=log, stderr=subprocess.STDOUT)
        while True:
            finished = proc.poll() is not None
            for iid in ids:
                report_file = instance_dir(base, iid) / "report.json"
                if iid not in settled and report_file.is_file():
                    settled.add(iid)
                    on_graded(iid, json.loads(report_file.read_text("utf-8"))[iid])
            if finished:
                break
            time.sleep(2)
    for iid in ids:
        if iid in settled:
            continue
        # no report: the harness gives none when the patch does not apply or the tests time out
        # (model outcomes, unresolved); any other missing report is an infrastructure failure
        log_text = _read(instance_dir(base, iid) / "run_instance.log")
        if "Patch Apply Failed" in log_text:
            settled.add(iid)
            on_graded(iid, {"resolved": False, "patch_successfully_applied": False, "note": "patch did not apply"})
        elif "Test timed out" in log_text:
            settled.add(iid)
            on_graded(
                iid,
                {"resolved": False, "patch_successfully_applied": True, "note": f"tests timed out after {timeout} s"},
            )
    return settled


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""
