"""The tree against the upstream tools themselves, when their sources are on this machine:

- the reference client's `scripts/publish_submission.py` (mlcommons/endpoints), run on a
  reference-shaped report folder of one point, lays out the same files with the same bytes as
  `trajbench submit` (its scaffold templates aside, whose TODOs the tree fills in);
- the MLPerf submission checker's endpoints parser (mlcommons/inference) reads every number
  the checker judges from each scenario folder.

Point TRAJBENCH_ENDPOINTS_REPO and TRAJBENCH_INFERENCE_REPO at a checkout or a git directory of
each; without them these tests are skipped and say so. (Nothing of either is copied into
trajbench: the tests run the upstream code itself, from a temporary folder.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import eval.submission as sub

ENDPOINTS_ENV = "TRAJBENCH_ENDPOINTS_REPO"
INFERENCE_ENV = "TRAJBENCH_INFERENCE_REPO"
PUBLISH = "scripts/publish_submission.py"
CHECKER = "tools/submission/submission_checker"
RESULTS = "closed/Acme/results/acme-box/kimi-k3"


def _fetch(env: str, rel: str, dest: Path) -> Path:
    """`rel` (a file or a folder) of the repository named by `env`, copied under `dest`."""
    root = os.environ.get(env)
    if not root:
        pytest.skip(f"set {env} to a checkout or git directory of the upstream repository to run this test")
    src = Path(root) / rel
    if src.exists():
        files = [src] if src.is_file() else [p for p in src.rglob("*") if p.is_file()]
        for f in files:
            out = dest / f.relative_to(root)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(f.read_bytes())
        return dest / rel
    git = ["git", "--git-dir", root]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", rel], capture_output=True, text=True)
    if names.returncode or not names.stdout.strip():
        pytest.skip(f"{env}={root}: no {rel} in it")
    for name in names.stdout.split():
        out = dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True, check=True).stdout)
    return dest / rel


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_publish_submission_lays_out_the_same_files(built_tree: Path, tmp_path: Path) -> None:
    script = _fetch(ENDPOINTS_ENV, PUBLISH, tmp_path / "endpoints")
    sc = built_tree / RESULTS / "online-c0004"
    report = tmp_path / "report"  # the reference's report folder of this point, from the tree's files
    (report / "performance").mkdir(parents=True)
    (report / "accuracy").mkdir()
    (report / "performance/result_summary.json").write_bytes((sc / "performance/result_summary.json").read_bytes())
    (report / "config.yaml").write_bytes((sc / "config.yaml").read_bytes())
    (report / "accuracy/accuracy_results.json").write_bytes((sc / "accuracy/accuracy_results.json").read_bytes())
    out = tmp_path / "published"
    done = subprocess.run(
        [sys.executable, str(script), "--run", str(report), "--output", str(out), "--division", "closed",
         "--submitter", "Acme", "--system", "acme-box", "--benchmark", "kimi-k3", "--scenario", "online-c0004",
         "--scaffold"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "QPS (primary metric): 1.94" in done.stdout
    published = _files(out)
    scenario = f"{RESULTS}/online-c0004"
    copied = {
        f"{scenario}/performance/run_1/result_summary.json",
        f"{scenario}/performance/run_1/config.yaml",
        f"{scenario}/accuracy/accuracy_results.json",
        f"{scenario}/accuracy/config.yaml",
    }
    scaffold = {f"{scenario}/measurements.json", "closed/Acme/systems/acme-box.json"}
    assert set(published) == copied | scaffold  # file for file
    ours = _files(built_tree)
    for name in copied:
        assert published[name] == ours[name], name  # byte for byte
    for name in scaffold:  # templates: every key is in the tree, answered
        template = json.loads(published[name])
        filled = json.loads(ours[name])
        assert set(template) <= set(filled), name
        assert not [k for k in template if "TODO" in str(filled[k])], name


def _parser(tmp_path: Path):
    pkg = _fetch(INFERENCE_ENV, CHECKER, tmp_path / "inference")
    sys.path.insert(0, str(pkg.parent))
    try:
        from submission_checker.parsers.endpoints_parser import EndpointsParser  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(pkg.parent))
    return EndpointsParser


def test_the_checkers_endpoints_parser_reads_every_judged_number(built_tree: Path, tmp_path: Path) -> None:
    parser = _parser(tmp_path)
    m = sub.SubmissionManifest.read(built_tree)
    for p in m.points:
        folder = str(built_tree / p.path)
        perf, acc = parser(folder, "performance"), parser(folder, "accuracy")
        summary = json.loads((built_tree / p.path / "performance/result_summary.json").read_text())
        assert perf["result_completed_samples_per_sec"] == p.headline.qps  # the Server metric
        assert perf["result_mean_latency_ns"] == summary["latency"]["avg"]  # the SingleStream metric
        assert (
            perf["result_first_token_50.00_percentile_latency_ns"]
            == summary["ttft"]["early_stopping_percentiles"]["50.0"]
        )
        assert perf["result_completed_tokens_per_second"] == p.headline.tps
        assert perf["qsl_reported_total_count"] == p.headline.n_samples_issued
        assert (perf["num_errors"], perf["result_query_count"]) == (0, p.headline.n_samples_completed)
        assert (perf["min_output_tokens"], perf["mean_output_tokens"]) == (430, 430.0)
        assert (perf["effective_scenario"], perf["streaming"], perf["load_pattern"]) == (
            "online",
            "on",
            "agentic_inference",
        )
        assert perf["effective_min_query_count"] == 17
        assert (perf["effective_sample_index_rng_seed"], perf["effective_schedule_rng_seed"]) == (42, 42)
        assert acc["accuracy_score"] == p.headline.inline_score
