"""The per-instance work of a SWE-bench run, on a pool of worker threads.

Per instance: start the runtime's environment, run the agent, write `patch.diff` when it finished
(atomically: its presence means "agent done"), then grade and write `grade.json` (its presence
means "graded"). The local runtime grades right after the agent in the same worker; the docker
runtime grades every patch at the end with one harness invocation. A failure of one instance
leaves that instance incomplete and the run going.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SwebenchError
from .progress import Reporter
from .summary import AGENT_LOG, GRADE_FILE, PATCH_FILE, TRAJECTORY_FILE, instance_dir, write_json, write_text

if TYPE_CHECKING:
    from .run import SwebenchOptions

Echo = Callable[[str], None]


class InstanceRunner:
    """Hands instances to worker threads: agent (then, locally, grading) per instance."""

    def __init__(
        self, opts: SwebenchOptions, out: Path, config: dict[str, Any], served: str, reporter: Reporter, echo: Echo
    ) -> None:
        self.opts = opts
        self.echo = echo
        self.out = out
        self.config = config
        self.served = served
        self.reporter = reporter
        self.stop = threading.Event()
        self.api_key = _api_key(opts.api_key_env)

    def run(self, todo_agent: list[dict[str, Any]], todo_grade: list[dict[str, Any]]) -> None:
        local = self.opts.runtime == "local"
        jobs: list[Callable[[], None]] = [partial(self._agent_then_grade, i, grade=local) for i in todo_agent]
        if local:
            jobs += [partial(self._grade_local, i) for i in todo_grade]
        self._pool(jobs)
        if not local and not self.stop.is_set():
            self._grade_docker(todo_agent + todo_grade)

    def _pool(self, jobs: list[Callable[[], None]]) -> None:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.opts.workers, thread_name_prefix="swebench")
        futures = [pool.submit(job) for job in jobs]
        try:
            for f in concurrent.futures.as_completed(futures):
                try:
                    f.result()
                except Exception as exc:  # one instance's failure leaves it incomplete, not the run
                    self.echo(f"an instance failed unexpectedly ({type(exc).__name__}: {exc}); it stays incomplete")
        except KeyboardInterrupt:
            # no new instances; running agents stop before their next step (their instances stay
            # incomplete) and save their trajectories; a second Ctrl-C abandons them
            self.stop.set()
            self.echo("interrupted: stopping the running agents at their next step (Ctrl-C again to abandon them)")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        except BaseException:
            self.stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()

    def _logger(self, instance_id: str) -> logging.Logger:
        log = logging.getLogger(f"trajbench.swebench.{instance_id}")
        log.setLevel(logging.INFO)
        log.propagate = False
        for h in list(log.handlers):
            log.removeHandler(h)
            h.close()
        handler = logging.FileHandler(instance_dir(self.out, instance_id) / AGENT_LOG, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(handler)
        return log

    def _agent_then_grade(self, instance: dict[str, Any], *, grade: bool) -> None:
        if self.stop.is_set():
            return
        from . import agent as agent_mod

        iid = instance["instance_id"]
        d = instance_dir(self.out, iid)
        d.mkdir(parents=True, exist_ok=True)
        log = self._logger(iid)
        log.info("instance %s: agent starts (runtime %s, model %s)", iid, self.opts.runtime, self.served)
        try:
            with tempfile.TemporaryDirectory(prefix="trajbench-agent-") as tmp:
                env, config = self._environment(instance, Path(tmp), log)
                if env is None:
                    self.reporter.agent_done(iid, "EnvironmentError")
                    return
                try:
                    outcome = agent_mod.run_agent(
                        instance,
                        env,
                        config,
                        api_key=self.api_key,
                        trajectory=d / TRAJECTORY_FILE,
                        log=log,
                        stop=self.stop,
                    )
                finally:
                    cleanup = getattr(env, "cleanup", None)
                    if cleanup is not None:
                        cleanup()
            if outcome.finished:
                write_text(d / PATCH_FILE, outcome.submission)
            self.reporter.agent_done(iid, outcome.exit_status)
        finally:
            for h in list(log.handlers):
                h.close()
                log.removeHandler(h)
        if outcome.finished:
            self.reporter.add_to_grade(1)
            if grade:
                self._grade_local(instance)

    def _environment(self, instance: dict[str, Any], tmp: Path, log: logging.Logger) -> tuple[Any, dict[str, Any]]:
        try:
            if self.opts.runtime == "local":
                from . import local

                workdir = local.clone_at_base(Path(str(self.opts.repos)), instance, tmp / "repo")
                return local.agent_environment(workdir, self.config, api_key_env=self.opts.api_key_env), local.localise(
                    self.config, workdir
                )
            from . import docker

            return docker.agent_environment(instance, self.config), self.config
        except Exception as exc:  # the instance is incomplete; the run goes on
            log.info("environment failed: %s", exc)
            return None, self.config

    def _grade_local(self, instance: dict[str, Any]) -> None:
        if self.stop.is_set():
            return
        from . import local

        iid = instance["instance_id"]
        d = instance_dir(self.out, iid)
        patch = (d / PATCH_FILE).read_text("utf-8")
        if not patch.strip():
            report: dict[str, Any] = {
                "patch_exists": False,
                "resolved": False,
                "note": "empty patch (not evaluated, as in the harness)",
            }
        else:
            try:
                report = local.grade(
                    instance,
                    patch,
                    Path(str(self.opts.repos)),
                    d / "test_output.txt",
                    model_name=self.served,
                    timeout=self.opts.test_timeout,
                )
            except SwebenchError as exc:
                self.reporter.graded(iid, "incomplete")
                _append(d / AGENT_LOG, f"grading failed: {exc}")
                return
        self._write_grade(iid, report)

    def _grade_docker(self, todo: list[dict[str, Any]]) -> None:
        from . import docker

        patches: dict[str, str] = {}
        for inst in todo:
            p = instance_dir(self.out, inst["instance_id"]) / PATCH_FILE
            if p.is_file():
                patches[inst["instance_id"]] = p.read_text("utf-8")
        for iid, patch in patches.items():
            if not patch.strip():
                self._write_grade(
                    iid,
                    {
                        "patch_exists": False,
                        "resolved": False,
                        "note": "empty patch (not evaluated, as in the harness)",
                    },
                )
        run_id = f"trajbench-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
        self.echo(
            f"grading {sum(1 for p in patches.values() if p.strip())} patch(es) with the swebench harness (logs in {self.out / docker.LOGS / run_id})"
        )
        settled = docker.grade(
            self.out,
            todo,
            patches,
            model_name=self.served,
            run_id=run_id,
            workers=self.opts.workers,
            timeout=self.opts.test_timeout,
            on_graded=lambda iid, report: self._write_grade(iid, report, harness_run_id=run_id),
        )
        for iid, patch in patches.items():
            if patch.strip() and iid not in settled:
                self.reporter.graded(iid, "incomplete")

    def _write_grade(self, iid: str, report: dict[str, Any], **extra: Any) -> None:
        status = "resolved" if report.get("resolved") is True else "unresolved"
        write_json(
            instance_dir(self.out, iid) / GRADE_FILE,
            {"instance_id": iid, "status": status, "runtime": self.opts.runtime, "report": report, **extra},
        )
        self.reporter.graded(iid, status)


def _api_key(env_name: str) -> str:
    # servers without authentication still need a non-empty key for the OpenAI client
    return os.environ.get(env_name) or "EMPTY"


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line.rstrip("\n") + "\n")
