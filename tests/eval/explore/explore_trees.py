"""Inputs of the explorer for tests and the benchmark: run folders (run.json and a result summary
made from records, as replay writes them), sweep folders, and submission trees in the shape
docs/explore.md documents (`trajbench-submission.json`, `systems/{system}.json`, `review.json`,
each point's run folder under its scenario folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runfolders import run_info

from replay import Record, Slo
from replay.results import SweepPlan, SweepPoint
from replay.results.summary import build_summary


def _record(k: int, send: int, e2e_ms: float, ttft_ms: float, tokens: int) -> Record:
    first = send + int(ttft_ms * (1 + 0.1 * (k % 5)) * 1_000_000)
    last = send + int(e2e_ms * 1_000_000)
    return Record(
        instance_id=f"t{k % 3}",
        trajectory_id=f"t{k % 3}",
        repeat=1,
        turn=2 * k + 1,
        client_turn_index=k,
        slot=0,
        worker=0,
        prompt_sha256="0" * 64,
        salt_repeat="4461",
        salt_conversation="e643",
        t_send_ns=send,
        t_first_ns=first,
        t_last_ns=last,
        chunk_ns=tuple(first + j * (last - first) // tokens for j in range(tokens)),
        delay_s=0.0,
        in_window=True,
        content="x" * tokens,
        reasoning="",
        tool_calls=(),
        finish_reason="stop",
        prompt_tokens=100,
        completion_tokens=tokens,
        cached_tokens=50,
        client_prompt_tokens=None,
        client_output_tokens=None,
        http_status=200,
        error_kind=None,
        error_message=None,
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


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def make_submission(
    root: Path,
    *,
    submitter: str = "acme",
    system: str = "box8",
    profile: str = "kimi-k3",
    date: str = "2026-02-01",
    concurrencies: tuple[int, ...] = (1, 4, 16),
    speed: float = 1.0,
    description: dict[str, Any] | None = None,
    review: dict[str, Any] | None = None,
    engine: Any = None,
    division: str = "closed",
    benchmark: str = "agentic",
    **run_over: Any,
) -> Path:
    """A submission tree as `trajbench submit` lays it out (the shape docs/explore.md documents);
    `description` None writes none, `review` None leaves the tree unreviewed."""
    results = root / division / submitter / "results" / system / benchmark
    points = []
    for c in concurrencies:
        scenario = results / f"c{c:04d}"
        run_dir = make_run(
            scenario / "trajbench",
            c,
            speed=speed,
            started_at=f"{date}T00:00:{c % 60:02d}+00:00",
            profile=profile,
            **run_over,
        )
        # the reference's copy of the summary beside the run folder (what the checker reads)
        (scenario / "performance").mkdir(parents=True, exist_ok=True)
        (scenario / "performance" / "result_summary.json").write_bytes((run_dir / "result_summary.json").read_bytes())
        points.append({"scenario": scenario.relative_to(root).as_posix(), "concurrency": c, "seal": f"sha256:{c:064x}"})
    _write(
        root / "trajbench-submission.json",
        {
            "trajbench_version": "0.0",
            "submission_date": date,
            "division": division,
            "submitter": submitter,
            "system": system,
            "profile": profile,
            "benchmark": benchmark,
            "dataset_hash": "abc123",
            "engine": engine,
            "swebench_mean": 0.71,
            "points": points,
        },
    )
    if description is not None:
        _write(root / division / submitter / "systems" / f"{system}.json", description)
    if review is not None:
        _write(root / "review.json", review)
    return root


def description(**over: Any) -> dict[str, Any]:
    """A system description: the checker's fields and trajbench's."""
    return {
        "system_name": "Box 8",
        "submitter": "acme",
        "division": "closed",
        "status": "available",
        "system_type": "datacenter",
        "number_of_nodes": "1",
        "accelerators_per_node": "8",
        "accelerator_model_name": "H200",
        "framework": "vLLM 0.9",
        "accelerator_type": "H200",
        "accelerator_count": 8,
        "price_per_hour_usd": 32.0,
        "power_watts": 6400.0,
    } | over


def passing_review(*scenarios: str) -> dict[str, Any]:
    return {
        "passed": True,
        "checks": [{"point": s, "check": "cache exploit audit", "passed": True, "reason": "ok"} for s in scenarios]
        + [{"point": "submission", "check": "swebench", "passed": True, "reason": "mean 71.0%"}],
    }
