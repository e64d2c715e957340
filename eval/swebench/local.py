"""The `local` runtime: the agent and the grading run in temporary copies of a task repository on
this machine. NOT isolated: the agent's commands run as the current user. For tests and for
air-gapped trials only; the official runtime is `docker`.

Task repositories come from `--repos DIR`: `DIR/<instance_id>` or `DIR/<owner>__<name>` (the
instance's `repo` with "/" replaced by "__"), a git repository that holds the instance's
`base_commit`. Each use is a fresh `git clone` of it checked out at that commit, so the agent and
the grader never see each other's working tree (as with two containers of one image).

Grading reuses the swebench harness wherever Docker is not the point:
- `swebench.harness.utils.make_test_spec` builds the instance's test spec and eval script
  (including the harness's test-exit-code recording);
- `swebench.harness.run_evaluation.GIT_APPLY_CMDS` is the patch-apply chain, tried in the
  harness's order with the same reset between attempts and the same reverse check;
- `swebench.harness.grading.get_eval_report` reads the test log: the instance's log parser from
  `PARSER_REGISTRY`, FAIL_TO_PASS / PASS_TO_PASS bookkeeping and the resolution status.
What differs from the container: the eval script runs with `bash` in the clone, with the
container's `/testbed` rewritten to the clone's path, and without the image's conda setup.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from minisweagent.environments.local import LocalEnvironment
from swebench.harness.constants import APPLY_PATCH_FAIL, APPLY_PATCH_PASS, TESTS_TIMEOUT
from swebench.harness.grading import get_eval_report
from swebench.harness.run_evaluation import GIT_APPLY_CMDS
from swebench.harness.utils import make_test_spec

from .errors import SwebenchError
from .summary import instance_dir

CONTAINER_WORKDIR = "/testbed"
NOT_ISOLATED = (
    "WARNING: --runtime local is NOT isolated: the agent's commands run on this machine as the "
    "current user, in temporary copies of the task repositories. Use it for tests and air-gapped "
    "trials only; official runs use --runtime docker."
)


def find_repo(repos: Path, instance: dict[str, Any]) -> Path:
    """The local task repository of `instance` under `repos`."""
    candidates = [
        instance_dir(repos, instance["instance_id"]),
        instance_dir(repos, str(instance.get("repo", "")).replace("/", "__")),
    ]
    for c in candidates:
        if (c / ".git").exists():
            return c
    raise SwebenchError(
        f"instance {instance['instance_id']}: no git repository at {' or '.join(str(c) for c in candidates)}; "
        "--runtime local needs a checkout of each task repository under --repos"
    )


def clone_at_base(repos: Path, instance: dict[str, Any], dest: Path) -> Path:
    """A fresh clone of the instance's task repository at its base commit."""
    source = find_repo(repos, instance)
    _git(["clone", "--quiet", "--no-hardlinks", str(source), str(dest)], Path.cwd(), instance)
    if instance.get("base_commit"):
        _git(["checkout", "--quiet", instance["base_commit"]], dest, instance)
    return dest


def _git(args: list[str], cwd: Path, instance: dict[str, Any]) -> None:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SwebenchError(f"instance {instance['instance_id']}: git {' '.join(args)} failed: {done.stderr.strip()}")


def agent_environment(workdir: Path, config: dict[str, Any], *, api_key_env: str) -> LocalEnvironment:
    """mini-swe-agent's local environment in `workdir`, with the SWE-bench config's variables."""
    env = {k: v for k, v in config.get("environment", {}).get("env", {}).items() if k != "BASH_ENV"}
    # the agent's shell inherits this process's environment: blank the API key so that a command
    # like `env` cannot copy it into the trajectory
    env[api_key_env] = ""
    timeout = int(config.get("environment", {}).get("timeout", 60))
    return LocalEnvironment(cwd=str(workdir), env=env, timeout=timeout)


def localise(config: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The agent config with the container's /testbed in the prompts pointing at `workdir`."""
    agent = {
        k: (v.replace(CONTAINER_WORKDIR, str(workdir)) if isinstance(v, str) else v) for k, v in config["agent"].items()
    }
    return {**config, "agent": agent}


def grade(
    instance: dict[str, Any], patch: str, repos: Path, test_log: Path, *, model_name: str, timeout: int
) -> dict[str, Any]:
    """Grade `patch` on a fresh clone; returns the harness's per-instance report (plus our notes)."""
    spec = make_test_spec(instance)
    iid = instance["instance_id"]
    with tempfile.TemporaryDirectory(prefix="trajbench-grade-") as tmp:
        repo = clone_at_base(repos, instance, Path(tmp) / "repo")
        patch_file = Path(tmp) / "patch.diff"
        patch_file.write_text(patch, encoding="utf-8")
        applied, apply_output = _apply(repo, patch_file)
        note = None
        if not applied:
            test_log.write_text(f"{APPLY_PATCH_FAIL}:\n{apply_output}", encoding="utf-8")
            note = "patch did not apply"
        else:
            script = Path(tmp) / "eval.sh"
            script.write_text(spec.eval_script.replace(CONTAINER_WORKDIR, str(repo)), encoding="utf-8")
            try:
                done = subprocess.run(
                    ["bash", str(script)],
                    cwd=repo,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                    start_new_session=True,
                )
                output = done.stdout.decode("utf-8", errors="replace")
            except subprocess.TimeoutExpired as exc:
                partial = (exc.output or b"").decode("utf-8", errors="replace")
                output = f"{partial}\n{TESTS_TIMEOUT}: {timeout} seconds exceeded.\n"
                note = f"tests timed out after {timeout} s"
            test_log.write_text(f"{APPLY_PATCH_PASS}:\n{apply_output}\n{output}", encoding="utf-8")
    pred = {"instance_id": iid, "model_name_or_path": model_name, "model_patch": patch}
    report: dict[str, Any] = get_eval_report(
        test_spec=spec, prediction=pred, test_log_path=str(test_log), include_tests_status=True
    )[iid]
    if note:
        report["note"] = note
    return report


def _apply(repo: Path, patch_file: Path) -> tuple[bool, str]:
    """The harness's apply chain (run_evaluation.run_instance), run in `repo`."""
    output = ""
    for attempt, cmd in enumerate(GIT_APPLY_CMDS):
        if attempt:
            # a failed attempt (notably --reject) leaves partial state behind, as in the harness
            subprocess.run("git checkout -- . ; git clean -fd", shell=True, cwd=repo, capture_output=True)
        done = subprocess.run(
            f"{cmd} {patch_file}", shell=True, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        output = done.stdout
        if done.returncode == 0:
            return True, output
    check = subprocess.run(["git", "apply", "--check", "--reverse", str(patch_file)], cwd=repo, capture_output=True)
    return check.returncode == 0, output
