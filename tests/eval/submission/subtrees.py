"""Sweeps and submission trees for the submit and review tests (helpers; fixtures in conftest.py).

A sweep is written the way `replay sweep` writes one (sweep.json, one run folder per
concurrency, each with run.json, records, result_summary.json and report.txt), every point an
official one the way the compliance tests make it: a real target, the profile's parameters, a
perfect model (`perfect`), the client tokenizer's 430 tokens per answer (inside kimi-k3's OSL
band), and the official gates written by `eval inline` / `eval osl`. The timings make the
frontier: C slots run in parallel lanes and each turn takes longer as C grows, so throughput
rises and per-user speed falls with C; a `slow` point is dominated.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from evalruns import ENGINE, OFFLINE_TOKENIZER, finish_run, perfect, record, run_info

import replay
import traces
from eval import osl_gate, score_run
from replay.results import RecordWriter, SweepPlan, SweepPoint, compress_records

TOKENS = 430
MS = 1_000_000
DATE = "2026-05-01"
#: every field of the MLPerf checker's system description, answered
SYSTEM: dict[str, Any] = {
    "status": "available",
    "system_name": "Acme Box (8x H100 SXM, vLLM)",
    "number_of_nodes": "1",
    "host_processor_model_name": "Acme CPU 9000",
    "host_processors_per_node": "2",
    "host_processor_core_count": "64",
    "host_memory_capacity": "2 TB",
    "host_storage_capacity": "8 TB",
    "host_storage_type": "NVMe SSD",
    "accelerators_per_node": "8",
    "accelerator_model_name": "NVIDIA H100-SXM-80GB",
    "accelerator_memory_capacity": "80 GB",
    "framework": "vLLM 0.32.0",
    "operating_system": "Ubuntu 24.04",
    "system_type": "datacenter",
    "other_software_stack": "CUDA 12.8",
    "host_processor_frequency": "3.0 GHz",
    "host_processor_caches": "",
    "host_memory_configuration": "32x 64 GB",
    "host_processor_interconnect": "",
    "host_networking": "100 Gb Ethernet",
    "host_networking_topology": "single node",
    "accelerator_frequency": "",
    "accelerator_host_interconnect": "PCIe 5.0 x16",
    "accelerator_interconnect": "NVLink 4",
    "accelerator_interconnect_topology": "",
    "accelerator_memory_configuration": "HBM3",
    "accelerator_on-chip_memories": "",
    "cooling": "air",
    "hw_notes": "",
    "sw_notes": "",
    "host_network_card_count": "1",
    "system_type_detail": "",
    "measurements": {
        "starting_weights_filename": "Kimi-K3 (official release)",
        "weight_data_types": "fp8",
        "input_data_types": "int32 (token ids)",
        "retraining": "no",
        "weight_transformations": "none",
    },
    "trajbench": {
        "accelerator_type": "H100-SXM-80GB",
        "accelerator_count": 8,
        "price_per_hour_usd": 98.32,
        "power_watts": 5600,
    },
}


def system_file(folder: Path, name: str = "acme-box", **over: Any) -> Path:
    """A system description (YAML) with `over` applied (a value None removes the key)."""
    data = {**SYSTEM, **over}
    data = {k: v for k, v in data.items() if v is not None}
    path = folder / f"{name}.yaml"
    path.write_text(traces.canonical_json(data) if path.suffix == ".json" else _yaml(data), encoding="utf-8")
    return path


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def padded(row: traces.TurnRow) -> dict[str, Any]:
    """The perfect answer padded to more characters than its `TOKENS` (fewer would be usage no
    tokenizer can give: the client-tokens check's "absurd")."""
    out = perfect(row)
    return {**out, "content": out["content"] + "\n" + "ok " * TOKENS}


def write_point(
    run_dir: Path,
    shards_dir: Path,
    concurrency: int,
    *,
    turn_ms: float | None = None,
    target: str = "real",
    judge: bool = True,
    **info: Any,
) -> Path:
    """A finished, official, judged run at `concurrency` (turn_ms: each turn's E2E)."""
    shards = traces.Shards(shards_dir)
    e2e = int((turn_ms if turn_ms is not None else 1000 * (1 + 0.25 * (concurrency - 1))) * MS)
    ttft = e2e // 5
    lanes = [0] * concurrency
    records = []
    k = 0
    for inst in shards:
        for row in inst.turns:
            lane = k % concurrency
            send = 1_000 * MS + lanes[lane]
            lanes[lane] += e2e
            r = record(row, padded(row), tokens=TOKENS, client_tokens=TOKENS)
            records.append(
                replace(
                    r,
                    slot=lane,
                    t_send_ns=send,
                    t_first_ns=send + ttft,
                    t_last_ns=send + e2e,
                    chunk_ns=(send + ttft, send + (ttft + e2e) // 2, send + e2e),
                    client_tokens_after_first=TOKENS - 1,
                    first_chunk_chars=1,
                )
            )
            k += 1
    run_dir.mkdir(parents=True, exist_ok=True)
    run_info(shards, concurrency=concurrency, target=target, tokenizer=OFFLINE_TOKENIZER, **info).write(run_dir)
    with RecordWriter(run_dir) as w:
        for r in records:
            w.write(r)
    finish_run(run_dir, window_close_ns=max(r.t_send_ns for r in records) + 1)  # as `replay run` ends it
    if judge:
        score_run(run_dir)
        osl_gate(run_dir)
    return run_dir


def write_sweep(folder: Path, shards_dir: Path, concurrencies: tuple[int, ...] = (1, 2, 4), **kw: Any) -> Path:
    """A sweep folder of official points (sweep.json listing each as done)."""
    folder.mkdir(parents=True, exist_ok=True)
    points = []
    for c in concurrencies:
        write_point(folder / f"c{c:04d}", shards_dir, c, **kw)
        points.append(SweepPoint(c, f"c{c:04d}", "done"))
    SweepPlan(base={}, concurrencies=list(concurrencies), points=points).write(folder)
    return folder


def add_point(sweep: Path, run: Path, concurrency: int) -> None:
    """List a run folder already inside `sweep` in its sweep.json."""
    plan = SweepPlan.read(sweep)
    points = [*plan.points, SweepPoint(concurrency, run.name, "done")]
    SweepPlan(base=plan.base, concurrencies=sorted({*plan.concurrencies, concurrency}), points=points).write(sweep)


def swebench_dirs(root: Path, scores: list[float], *, profile: str = "kimi-k3") -> list[Path]:
    """Four region runs' summaries, as `trajbench eval swebench` writes them."""
    out = []
    for k, s in enumerate(scores):
        d = root / f"swe-{k}"
        d.mkdir(parents=True)
        summary = {
            "kind": "swebench",
            "profile": profile,
            "instances": 200,
            "resolved": round(s * 200),
            "incomplete": 0,
            "score": s,
            "concurrency": 2**k,
            "runtime": "docker",
            # the same model on the same engine as the points (the same-model audit)
            "model": traces.get_profile(profile).served_model_name,
            "engine": asdict(ENGINE),
        }
        (d / "swebench_summary.json").write_text(json.dumps(summary), encoding="utf-8")
        out.append(d)
    return out


def rewrite_records(run_dir: Path, edit: Any) -> None:
    """Rewrite a run folder's records (plain or compressed) through `edit(list[Record])`."""
    records = edit(list(replay.read_records(run_dir)))
    for name in ("records.jsonl", "records.jsonl.zst"):
        (run_dir / name).unlink(missing_ok=True)
    with RecordWriter(run_dir) as w:
        for r in records:
            w.write(r)
    compress_records(run_dir)


def reseal_tree(tree: Path) -> None:
    """Make the manifest's file table match the tree again (an attacker covering an edit)."""
    from eval.submission import NOT_SUBMITTED, SubmissionManifest, file_table, folder_digest

    m = SubmissionManifest.read(tree)
    files = file_table(tree, skip=NOT_SUBMITTED)
    points = [replace(p, run_digest=folder_digest(files, p.run)) for p in m.points]
    replace(m, files=files, points=points).write(tree)


def edit_json(path: Path, edit: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
