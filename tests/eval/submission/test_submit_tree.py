"""`trajbench submit` (docs/submission.md): the tree the MLPerf checker and the reference's publish
script lay out, one scenario per frontier point, the run folders whole, the manifest of every
file, and only complete, judged, accurate frontier points."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import in_process
from subtrees import DATE, TOKENS, add_point, edit_json, rewrite_records, write_point

import eval.submission as sub
from eval import EvalError, submit
from eval.swebench import swebench_mean
from replay import SUMMARY_FILE
from replay.results import write_seal

RESULTS = "closed/Acme/results/acme-box/kimi-k3"
#: the files of a scenario folder besides the run folder: the checker's and the publish script's
SCENARIO_FILES = {
    "README.md",
    "measurements.json",
    "config.yaml",
    "performance/result_summary.json",
    "performance/run_1/result_summary.json",
    "performance/run_1/config.yaml",
    "accuracy/accuracy_results.json",
    "accuracy/config.yaml",
}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_the_tree_holds_both_layouts_the_runs_and_the_system(built_tree: Path, sweep: Path) -> None:
    scenarios = sorted(p.name for p in (built_tree / RESULTS).iterdir())
    assert scenarios == ["online-c0001", "online-c0002", "online-c0004"]
    for name in scenarios:
        sc = built_tree / RESULTS / name
        own = {f for f in _files(sc) if not f.startswith("trajbench/")}
        assert own == SCENARIO_FILES
        summary = (sc / "performance/result_summary.json").read_bytes()
        run = sweep / f"c{int(name[-4:]):04d}"
        assert summary == (run / SUMMARY_FILE).read_bytes()  # a byte copy of the run's
        assert (sc / "performance/run_1/result_summary.json").read_bytes() == summary
        config = (sc / "config.yaml").read_bytes()
        assert (sc / "performance/run_1/config.yaml").read_bytes() == config
        assert (sc / "accuracy/config.yaml").read_bytes() == config
        assert _files(sc / "trajbench") == _files(run)  # the run folder whole
        for f in _files(run):
            assert (sc / "trajbench" / f).read_bytes() == (run / f).read_bytes()
    system = json.loads((built_tree / "closed/Acme/systems/acme-box.json").read_text())
    assert list(system)[: len(sub.SYSTEM_FIELDS)] == list(sub.SYSTEM_FIELDS)
    assert system["submitter"] == "Acme" and system["division"] == "closed"
    assert system["trajbench"] == {
        "accelerator_type": "H100-SXM-80GB",
        "accelerator_count": 8,
        "price_per_hour_usd": 98.32,
        "power_watts": 5600.0,
    }
    assert (built_tree / "closed/Acme/src/README.md").read_text().startswith("# Harness")
    assert sorted(p.name for p in (built_tree / "trajbench/swebench").iterdir()) == [
        "1-swe-0",
        "2-swe-1",
        "3-swe-2",
        "4-swe-3",
    ]


def test_the_manifest_names_every_point_its_numbers_and_every_file(built_tree: Path, region_runs: list[Path]) -> None:
    m = sub.SubmissionManifest.read(built_tree)
    assert (m.division, m.submitter, m.system, m.benchmark, m.profile) == (
        "closed",
        "Acme",
        "acme-box",
        "kimi-k3",
        "kimi-k3",
    )
    assert m.submission_date == DATE and m.excluded == []
    assert [p.concurrency for p in m.points] == [1, 2, 4]
    c2 = m.points[1]
    assert c2.path == f"{RESULTS}/online-c0002" and c2.run == f"{RESULTS}/online-c0002/trajbench"
    assert c2.source == "c0002" and c2.target == "real" and c2.gates == "official"
    h = c2.headline
    assert (h.n_samples_issued, h.window_turns, h.window_not_ok, h.inline_score, h.osl_mean) == (17, 17, 0, 1.0, TOKENS)
    # 17 turns of 1.25 s on 2 lanes: the last ends at 9 x 1.25 s; 430 tokens each
    assert h.output_tokens_per_s == pytest.approx(17 * TOKENS / (9 * 1.25))
    assert h.per_user_tokens_per_s == pytest.approx(TOKENS / 1.25)
    assert m.files == sub.file_table(built_tree, skip=sub.NOT_SUBMITTED)
    assert c2.run_digest == sub.folder_digest(m.files, c2.run)
    assert m.swebench is not None and m.swebench.mean == swebench_mean([str(d) for d in region_runs]).mean
    assert m.swebench.runs[0].path == "trajbench/swebench/1-swe-0"


def test_config_and_accuracy_results_have_the_reference_shape(built_tree: Path) -> None:
    sc = built_tree / RESULTS / "online-c0002"
    config = yaml.safe_load((sc / "config.yaml").read_text())
    assert config["type"] == "online" and config["version"] == "1.0"
    assert config["model_params"]["streaming"] == "on" and config["model_params"]["max_new_tokens"] == 8192
    assert config["settings"]["load_pattern"] == {"type": "agentic_inference", "target_concurrency": 2}
    assert config["settings"]["runtime"] == {
        "min_duration_ms": 0,
        "max_duration_ms": 0,
        "n_samples_to_issue": 17,
        "scheduler_random_seed": 42,
        "dataloader_random_seed": 42,
    }
    agentic = config["datasets"][0]["agentic_inference"]
    assert agentic["enable_salt"] is True and agentic["num_trajectories_to_issue"] == 4
    assert config["endpoint_config"] == {"endpoints": ["http://127.0.0.1:1"], "api_type": "openai"}
    acc = json.loads((sc / "accuracy/accuracy_results.json").read_text())
    (entry,) = acc["accuracy_scores"]
    assert entry["dataset_type"] == "performance" and entry["score"] == 1.0
    assert (entry["total_samples"], entry["unit_samples"], entry["complete"]) == (17, 17, True)
    assert json.loads((sc / "measurements.json").read_text())["weight_data_types"] == "fp8"


def test_same_runs_and_options_give_the_same_bytes(built_tree: Path, sweep: Path, region_runs, system_yaml, tmp_path):
    again = tmp_path / "again"
    submit(
        [sweep],
        again,
        submitter="Acme",
        division="closed",
        system_file=system_yaml,
        swebench=region_runs,
        submission_date=DATE,
    )
    assert (again / sub.SUBMISSION_FILE).read_bytes() == (built_tree / sub.SUBMISSION_FILE).read_bytes()
    assert sub.file_table(again) == sub.file_table(built_tree, skip=frozenset({"review.json", "review.md"}))


def test_only_complete_judged_accurate_frontier_points_are_submitted(
    sweep: Path, sample_shards: Path, system_yaml: Path, tmp_path: Path
) -> None:
    mine = Path(shutil.copytree(sweep, tmp_path / "sweep"))
    extra: dict[int, dict[str, Any]] = {
        3: dict(turn_ms=3000),  # slower and less throughput than c0002: dominated
        8: {},  # loses turns below
        16: dict(judge=False),
    }
    for c, kw in extra.items():
        write_point(mine / f"c{c:04d}", sample_shards, c, **kw)
        add_point(mine, mine / f"c{c:04d}", c)
    rewrite_records(mine / "c0008", lambda rs: rs[:12])
    res = submit([mine], tmp_path / "tree", submitter="Acme", division="closed", system_file=system_yaml)
    assert [p.concurrency for p in res.manifest.points] == [1, 2, 4]
    reasons = {e.source: e.reason for e in res.manifest.excluded}
    assert reasons["c0003"] == "not on the frontier: c0002 dominates it"
    assert reasons["c0008"] == "partial run: it records 12 of its 17 planned turns"
    assert reasons["c0016"].startswith("not judged: no verdict of inline accuracy (`trajbench eval inline ")
    assert "or the OSL gate (`trajbench eval osl " in reasons["c0016"]


def test_a_failed_gate_is_left_out_and_nothing_to_submit_is_an_error(
    sample_shards: Path, system_yaml: Path, tmp_path: Path
) -> None:
    run = write_point(tmp_path / "short", sample_shards, 1)
    edit_json(run / "osl.json", lambda d: d.update(passed=False))  # as `eval osl` writes a failing band
    with pytest.raises(EvalError, match=r"no point can be submitted: short: fails the OSL gate \(mean 430.0"):
        submit([run], tmp_path / "tree", submitter="Acme", division="closed", system_file=system_yaml)
    assert not (tmp_path / "tree").exists()


def test_a_run_edited_after_it_ran_is_refused_and_nothing_is_written(
    sweep: Path, system_yaml: Path, tmp_path: Path
) -> None:
    mine = Path(shutil.copytree(sweep, tmp_path / "sweep"))
    edit_json(mine / "c0002" / SUMMARY_FILE, lambda d: d.update(qps=d["qps"] * 10))
    with pytest.raises(EvalError) as exc:
        submit([mine], tmp_path / "tree", submitter="Acme", division="closed", system_file=system_yaml)
    assert f"c0002/seal.json: changed since sealed: {SUMMARY_FILE} changed" in str(exc.value)
    assert "rerun the point" in str(exc.value)
    assert not (tmp_path / "tree").exists() and not list(tmp_path.glob(".tree.*"))
    write_seal(mine / "c0002", "replay run")  # an editor who seals the edit too: the numbers still tell
    with pytest.raises(EvalError) as exc:
        submit([mine], tmp_path / "tree", submitter="Acme", division="closed", system_file=system_yaml)
    assert f"{SUMMARY_FILE}: qps stored 15.1111, recomputed 1.51111" in str(exc.value)
    assert not (tmp_path / "tree").exists()


def test_a_run_whose_seal_is_broken_is_refused(sweep: Path, system_yaml: Path, tmp_path: Path) -> None:
    """A change no recomputation sees (here the report's text) still breaks the run's seal."""
    mine = Path(shutil.copytree(sweep, tmp_path / "sweep"))
    with (mine / "c0004/report.txt").open("a", encoding="utf-8") as f:
        f.write("edited\n")
    with pytest.raises(EvalError, match=r"c0004: .*report.txt changed.*rerun the point"):
        submit([mine], tmp_path / "tree", submitter="Acme", division="closed", system_file=system_yaml)
    assert not (tmp_path / "tree").exists()


def test_out_is_never_an_input_and_is_replaced_only_when_it_is_a_tree(
    built_tree: Path, sweep: Path, system_yaml: Path, tmp_path: Path
) -> None:
    kw = dict(submitter="Acme", division="closed", system_file=system_yaml, submission_date=DATE)
    with pytest.raises(EvalError, match="overlaps the input"):
        submit([sweep], sweep / "tree", **kw)  # type: ignore[arg-type]
    taken = tmp_path / "taken"
    (taken / "x").mkdir(parents=True)
    with pytest.raises(EvalError, match="already exists; pass --overwrite"):
        submit([sweep], taken, **kw)  # type: ignore[arg-type]
    with pytest.raises(EvalError, match="not a submission tree"):
        submit([sweep], taken, overwrite=True, **kw)  # type: ignore[arg-type]
    again = Path(shutil.copytree(built_tree, tmp_path / "again"))
    res = submit([sweep], again, overwrite=True, **kw)  # type: ignore[arg-type]
    assert res.manifest.swebench is None and not (again / "trajbench").exists()  # replaced, not merged


def test_cli_submit_prints_the_points_and_what_was_left_out(sweep: Path, system_yaml: Path, tmp_path: Path, capsys):
    out = tmp_path / "tree"
    code, stdout, err = in_process(
        [
            "submit",
            str(sweep),
            "--out",
            str(out),
            "--submitter",
            "Acme",
            "--division",
            "closed",
            "--system-file",
            str(system_yaml),
            "--date",
            DATE,
        ],
        capsys,
    )
    assert code == 0, err
    assert f"{RESULTS}/online-c0004: c=4 " in stdout
    assert "note: self-check accepted " in stdout and "git_sha: null: trajbench is identified by `version`" in stdout
    assert f"wrote {out} (3 point(s)" in stdout
    code, _, err = in_process(
        ["submit", str(sweep), "--out", str(tmp_path / "t2"), "--submitter", "../x", "--division", "closed",
         "--system-file", str(system_yaml)],
        capsys,
    )  # fmt: skip
    assert code == 1 and err.startswith("Error: --submitter '../x': must be 1-128 letters")
    code, _, err = in_process(
        ["submit", str(sweep), "--out", str(tmp_path / "t3"), "--submitter", "Acme", "--division", "closed",
         "--system-file", str(system_yaml), "--date", "May 1"],
        capsys,
    )  # fmt: skip
    assert code == 1 and "--date 'May 1': not a date; write it as YYYY-MM-DD" in err
