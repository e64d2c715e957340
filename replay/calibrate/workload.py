"""Calibration on a dataset's own prompts (`replay calibrate --shards DIR`): the client as a user runs it.

The fixed workload of `replay.calibrate.run` (a two-word prompt) says what the streaming path
costs, not what a run costs: the benchmark's prompts are tens of kilobytes, carry tools, and each
instance's turns are rebuilt from the shards, salted and hashed before they are sent. Here our
client is the real command, `trajbench replay run SHARDS --endpoint <calibration server>
--no-delays`, in its own process (on the client CPUs), so its figures include what a user pays
for: start-up, shard verification, the preflight, writing the records, the gates' scoring. Its
CPU is read two ways: the whole process (`os.wait4`'s resource usage), and the streaming phase
alone, from the first request to the last byte, by sampling the process's CPU counters
(`/proc/<pid>/stat`) while it runs. Its timing error comes from its own records: the calibration
server writes its send stamp as each chunk's text, and a record keeps every chunk's arrival.

agentic-bench replays the same instances through `abench_driver.py`, from a file of each
instance's wire messages turn by turn (`write_sessions`), building each request as its own engine
does (the history grows by each turn's new messages).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..errors import ReplayError

#: Clock ticks per second of /proc's CPU counters.
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system, every thread, and its children that have ended) a live process
    has used; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return sum(int(v) for v in fields[11:15]) / _TICKS  # utime, stime, cutime, cstime (fields 14-17)


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds of a live process and its live descendants (a run's worker processes)."""
    own = process_cpu_s(pid)
    if own is None:
        return None
    for child in _children(pid):
        own += tree_cpu_s(child) or 0.0
    return own


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


class CpuSampler:
    """The CPU counters of process `pid` and its descendants, sampled every `every_s` on the monotonic clock (a thread
    of ours: the sampled process is not touched), so the CPU spent between two instants of its
    records can be read afterwards."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid = pid
        self.every_s = every_s
        self.samples: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cpu-{pid}", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            cpu = tree_cpu_s(self.pid)
            if cpu is None:
                return
            self.samples.append((time.monotonic_ns(), cpu))
            self._stop.wait(self.every_s)

    def cpu_at(self, t_ns: int) -> float:
        """The process's CPU seconds at `t_ns`, interpolated between the samples around it."""
        if not self.samples:
            raise ReplayError(f"no CPU sample of process {self.pid}: it ended before it could be read")
        before = [s for s in self.samples if s[0] <= t_ns]
        after = [s for s in self.samples if s[0] >= t_ns]
        if not before:
            return self.samples[0][1]
        if not after:
            return self.samples[-1][1]
        (t0, c0), (t1, c1) = before[-1], after[0]
        return c0 if t1 == t0 else c0 + (c1 - c0) * (t_ns - t0) / (t1 - t0)


def run_trajbench(
    shards: Path,
    url: str,
    *,
    concurrency: int,
    trajectories: int,
    workers: int,
    loop: str,
    cores: frozenset[int] | None,
    out: Path,
) -> dict[str, Any]:
    """One `trajbench replay run` against the calibration server; its raw facts (the shape
    `replay.calibrate.run` reads), plus the whole process's CPU and the turn's slot."""
    from ..results import RunOutcome, read_records

    cmd = [
        sys.executable,
        "-m",
        "cli",
        "replay",
        "run",
        str(shards.resolve()),
        "--endpoint",
        url,
        "-c",
        str(concurrency),
        "--workers",
        str(workers),
        "--trajectories",
        str(trajectories),
        "--no-delays",
        "--progress",
        "none",
        "--out",
        str(out),
        "--overwrite",
    ]
    env = dict(os.environ, TRAJBENCH_EVENT_LOOP=loop)
    log = out.parent / f"{out.name}.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            cmd, stdout=sink, stderr=subprocess.STDOUT, env=env, preexec_fn=pinned(cores), cwd=_project_root()
        )
        with CpuSampler(proc.pid) as sampler:
            _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    # the gates judge accuracy against recorded answers; the calibration server's answers are
    # its stamps, so they fail (exit 1): only a run that did not finish whole is an error here
    outcome = RunOutcome.read(out)
    if proc.returncode not in (0, 1) or not outcome.complete or outcome.all_failed:
        tail = log.read_text("utf-8", "replace").strip().splitlines()[-3:]
        raise ReplayError(
            f"`trajbench replay run` did not finish a complete run (exit {proc.returncode}): {' | '.join(tail)}"
        )
    records = list(read_records(out))
    sent = [r for r in records if r.chunk_ns]
    t_start = min(r.t_send_ns for r in records)
    t_end = max(r.t_last_ns or r.t_send_ns for r in records)
    first: dict[tuple[int, int], Any] = {}
    for r in sorted(sent, key=lambda r: r.t_send_ns):
        first.setdefault((r.worker, r.slot), r)
    return {
        "cpu_s": sampler.cpu_at(t_end) - sampler.cpu_at(t_start),
        "process_cpu_s": usage.ru_utime + usage.ru_stime,
        "t_start_ns": t_start,
        "t_end_ns": t_end,
        "failed": sum(1 for r in records if r.failed),
        "turns": [[list(r.chunk_ns), r.content, first[(r.worker, r.slot)] is r] for r in sent],
    }


def write_sessions(shards: Path, folder: Path) -> Path:
    """A JSONL file for `abench_driver.py`: the request's fixed fields (model, sampling), then per
    stored instance its tools and each turn's new wire messages (turn k's prompt = the messages of
    turns 1..k), as `replay run` would send them."""
    import traces

    path = folder / "sessions.jsonl"
    store = traces.Shards(shards)
    profile, _ = traces.shards_profile(store, quiet_without_tokenizer=True)  # the one `replay run` picks
    params = traces.request_body([], None, profile)
    del params["messages"]
    with open(path, "wb") as f:
        f.write(orjson.dumps({"params": params}) + b"\n")
        for k in range(len(store)):
            turns: list[list[dict[str, Any]]] = []
            tools: Any = None
            seen = 0
            for prompt in traces.iter_prompts(store.instance(k)):
                turns.append(prompt.messages[seen:])
                seen = len(prompt.messages)
                tools = prompt.tools
            f.write(orjson.dumps({"tools": tools, "turns": turns}) + b"\n")
    return path


def scratch() -> tempfile.TemporaryDirectory[str]:
    """Where the runs and the sessions file go (removed afterwards)."""
    return tempfile.TemporaryDirectory(prefix="trajbench-calibrate-")


def pinned(cores: frozenset[int] | None) -> Callable[[], None] | None:
    """A child process's first act (before exec): run only on `cores`."""
    if not cores:
        return None
    return lambda: os.sched_setaffinity(0, cores)


def _project_root() -> Path:
    return Path(__file__).resolve().parents[2]
