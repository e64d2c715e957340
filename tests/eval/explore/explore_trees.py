"""Inputs of the explorer for tests and the benchmark: run folders (run.json and a result summary
made from records, as replay writes them), sweep folders, and submission trees made by the real
`trajbench submit` (`eval.submit`) from run folders the submission tests' own helpers write
(tests/eval/submission/subtrees.py: official, judged points over the test shards), so the
explorer reads exactly what submit writes. A review.json is written in the review's own typed
form (`eval.submission.report_of`), with the checks a test asks for.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from records import record
from runfolders import run_info
from subtrees import SYSTEM, swebench_dirs, system_file, write_point

import traces
from eval import osl_gate, score_run, submit
from eval.submission import ReviewCheck, SubmissionManifest, report_of
from replay import EngineIdentity, Record, Slo, write_seal
from replay.results import SweepPlan, SweepPoint
from replay.results.summary import build_summary


def _record(k: int, send: int, e2e_ms: float, ttft_ms: float, tokens: int) -> Record:
    first = send + int(ttft_ms * (1 + 0.1 * (k % 5)) * 1_000_000)
    last = send + int(e2e_ms * 1_000_000)
    return record(
        instance_id=f"t{k % 3}",
        trajectory_id=f"t{k % 3}",
        turn=2 * k + 1,
        client_turn_index=k,
        t_send_ns=send,
        t_first_ns=first,
        t_last_ns=last,
        chunk_ns=tuple(first + j * (last - first) // tokens for j in range(tokens)),
        content="x" * tokens,
        completion_tokens=tokens,
        cached_tokens=50,
        first_chunk_chars=1,
    )


def make_run(
    folder: Path,
    concurrency: int,
    *,
    speed: float = 1.0,
    started_at: str = "2026-01-01T00:00:00+00:00",
    slo: Slo | None = None,
    tokens: int = 40,
    **info_over: Any,
) -> Path:
    """A finished run folder against a real target (unless `target` says otherwise): closed-loop
    turns whose E2E and TTFT grow with the concurrency (a slower system at `speed` < 1), so
    throughput rises and per-user speed falls along a sweep."""
    folder.mkdir(parents=True, exist_ok=True)
    e2e_ms = 100.0 * (1 + concurrency / 32) / speed
    ttft_ms = 10.0 * (1 + concurrency / 16) / speed
    turns = min(max(12, 2 * concurrency), 96)  # enough turns that throughput grows with the slots
    spacing = int(e2e_ms * 1_000_000 / concurrency)
    records = [_record(k, k * spacing, e2e_ms, ttft_ms, tokens) for k in range(turns)]
    over = {"target": "real", "target_evidence": None} | info_over
    info = run_info(concurrency=concurrency, started_at=started_at, slo=slo, **over)
    info.write(folder)
    build_summary(records, info.to_json(), slo=slo).write(folder)
    (folder / "report.txt").write_text(f"run at C={concurrency}\n", encoding="utf-8")
    return folder


def make_sweep(root: Path, concurrencies: list[int], **run_over: Any) -> Path:
    for c in concurrencies:
        make_run(root / f"c{c:04d}", c, **run_over)
    SweepPlan({}, concurrencies, [SweepPoint(c, f"c{c:04d}", "done") for c in concurrencies]).write(root)
    return root


#: what a review names the submission as a whole by (eval.review's SUBMISSION)
WHOLE = "submission"


def hardware(**over: Any) -> dict[str, Any]:
    """The system description's `trajbench` keys (what the explorer normalises by), `over` applied."""
    return {**SYSTEM["trajbench"], "accelerator_type": "H200", "price_per_hour_usd": 32.0, "power_watts": 6400} | over


def engine(label: str) -> EngineIdentity:
    """run.json's engine identity of an engine that says `label` ("vllm 0.9.1")."""
    name, _, version = label.partition(" ")
    return EngineIdentity(name, ["m"], None, version or None, None, ["GET /v1/models", "GET /version"])


@dataclass(frozen=True)
class Submitter:
    """Makes submission trees with `trajbench submit` over the shards `shards`: each point measured
    (written) in `scratch`, outside the explorer's inputs, then submitted."""

    shards: Path
    scratch: Path

    def measure(
        self,
        concurrencies: Sequence[int],
        *,
        date: str = "2026-02-01",
        speed: float = 1.0,
        engine_says: str | None = None,
        **info: Any,
    ) -> list[Path]:
        """Official, judged, sealed run folders at `concurrencies`, started on `date`, with the
        engine identity `engine_says` in run.json and `info` its other fields (an SLO).

        Each point's C slots run the shards' turns in parallel lanes, each turn a little slower
        as C grows (all of it divided by `speed`), so every point is on the frontier and submit
        keeps it, up to the shards' client turns (17 in the test shards): beyond that more slots
        add nothing, so a submission holds one point there at most (submit leaves out the others
        as dominated)."""
        work = Path(tempfile.mkdtemp(prefix="runs-", dir=self.scratch))
        runs = []
        for c in concurrencies:
            run = write_point(
                work / f"c{c:04d}",
                self.shards,
                c,
                turn_ms=1000 * (1 + math.log2(c) / 8) / speed,
                judge=False,
                started_at=f"{date}T00:00:{c % 60:02d}+00:00",
                engine=engine(engine_says) if engine_says else None,
                **info,
            )
            write_seal(run, "replay run")  # as `replay run` ends; the gates amend the seal
            score_run(run)
            osl_gate(run)
            runs.append(run)
        return runs

    def submit(
        self,
        root: Path,
        runs: Sequence[Path],
        *,
        submitter: str = "acme",
        system: str = "box8",
        date: str = "2026-02-01",
        trajbench: dict[str, Any] | None = None,
        swebench: Sequence[float] = (0.71, 0.71, 0.71, 0.71),
        division: str = "closed",
    ) -> Path:
        """The tree `submit` writes at `root` from `runs`, with a system description whose
        hardware keys are `trajbench` (default `hardware()`); every run must be a point of it."""
        work = Path(tempfile.mkdtemp(prefix=f"{submitter}-{system}-", dir=self.scratch))
        hw = trajbench if trajbench is not None else hardware()
        description = system_file(
            work, system, trajbench=hw, accelerators_per_node=str(hw["accelerator_count"]), number_of_nodes="1"
        )
        result = submit(
            runs,
            root,
            submitter=submitter,
            division=division,
            system_file=description,
            swebench=swebench_dirs(work, list(swebench)) if swebench else (),
            submission_date=date,
        )
        left_out = result.manifest.excluded
        assert not left_out, f"submit left out {left_out}; measure points it keeps"
        return root

    def submission(
        self,
        root: Path,
        *,
        concurrencies: Sequence[int] = (1, 4, 16),
        speed: float = 1.0,
        engine_says: str | None = None,
        submitter: str = "acme",
        system: str = "box8",
        date: str = "2026-02-01",
        trajbench: dict[str, Any] | None = None,
        swebench: Sequence[float] = (0.71, 0.71, 0.71, 0.71),
        division: str = "closed",
        **info: Any,
    ) -> Path:
        """Points measured (`measure`) on `date`, then submitted (`submit`) at `root`."""
        runs = self.measure(concurrencies, date=date, speed=speed, engine_says=engine_says, **info)
        return self.submit(
            root,
            runs,
            submitter=submitter,
            system=system,
            date=date,
            trajbench=trajbench,
            swebench=swebench,
            division=division,
        )


def point_path(root: Path, concurrency: int) -> str:
    """How the manifest (and a review) names the point at `concurrency`: its scenario folder."""
    (path,) = [p.path for p in SubmissionManifest.read(root).points if p.concurrency == concurrency]
    return path


def write_review(root: Path, checks: Iterable[tuple[int | None, str, bool, str]]) -> Path:
    """review.json as `trajbench review` writes it, holding `checks`: (the point's concurrency,
    or None for the submission as a whole; the check; passed; why)."""
    items = [ReviewCheck(WHOLE if c is None else point_path(root, c), name, ok, why) for c, name, ok, why in checks]
    digest = traces.sha256_file(root / SubmissionManifest.FILE)
    return report_of(SubmissionManifest.read(root), items, None, digest).write(root)


def passing_review(root: Path, *concurrencies: int) -> Path:
    """A passing review: one check of each point at `concurrencies`, one of the submission."""
    return write_review(
        root, [*((c, "cache-exploit", True, "ok") for c in concurrencies), (None, "swebench", True, "mean 71.0%")]
    )
