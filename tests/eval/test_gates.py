"""Research gates (`--gates dataset|off`, docs/accuracy.md): on a dataset that is not the
official one a perfect model passes bars derived from the dataset and fails the official OSL
band; `off` never fails; every file says which gates judged it; `eval check` refuses them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from evalruns import SimStepCounter, WordCounter, oracle, write_run

import jobs
import traces
from cli import cli
from eval import OSL_FILE, SCORES_FILE, EvalError, gate_verdicts, osl_gate, score_run
from eval.compliance import check_submission
from eval.gates import OSL_TOLERANCE
from replay import RunConfig
from replay.sim import config_from_args

ZERO_LATENCY = ("--step-base-ms", "0", "--prefill-ms-per-token", "0", "--batch-ms-per-seq", "0")


def _silent(row: traces.TurnRow) -> dict[str, Any]:
    """A model that answers nothing: no intent, no action."""
    return {"content": "", "reasoning": "", "tool_calls": []}


def test_perfect_model_on_another_dataset_passes_dataset_gates_and_fails_the_official_band(
    tmp_path: Path, sample_shards: Path
) -> None:
    run = write_run(tmp_path / "run", sample_shards, answer=oracle)
    official = osl_gate(run)
    assert official.passed is False and "below the band 390-475" in official.reason
    inline_official = score_run(run)
    assert inline_official.gates.mode == "official" and inline_official.threshold == 0.5832

    scores = score_run(run, gates="dataset")
    g = scores.gates
    # the recorded answers' own score is what a copy of them scores: the bar is that × the official share
    assert (g.mode, g.official) == ("dataset", False)
    assert g.perfect_score == scores.score and g.factor == 0.5832
    assert scores.score is not None and scores.threshold == round(scores.score * 0.5832, 4) and scores.passed is True
    assert "dataset-derived" in g.how and "not an official result" in g.how

    osl = osl_gate(run, gates="dataset")
    centre = osl.window.expected_mean
    assert centre is not None and centre < 390  # far below the official band: the dataset's own answers
    assert osl.gates.centre == centre and osl.gates.tolerance == OSL_TOLERANCE == 0.10
    assert (osl.band.min, osl.band.max) == (round(centre * 0.9, 2), round(centre * 1.1, 2))
    assert osl.passed is True and osl.window.mean == centre and osl.window.in_band is True
    assert "research band" in osl.reason and "not an official result" in osl.reason

    # both files say which gates judged them, and a report reads that back
    written = json.loads((run / SCORES_FILE).read_text())["gates"]
    assert written == {
        "mode": "dataset",
        "official": False,
        "how": g.how,
        "perfect_score": g.perfect_score,
        "factor": 0.5832,
    }
    assert json.loads((run / OSL_FILE).read_text())["gates"]["centre"] == centre
    verdicts = gate_verdicts(run)
    assert verdicts.modes == ("dataset",) and verdicts.inline_pass is True and verdicts.osl_pass is True
    assert verdicts.note == "research gates: dataset-derived — not an official result"


def test_a_workflow_answer_that_states_no_intent_lowers_the_perfect_score(tmp_path: Path, sample: Path) -> None:
    """A recorded workflow answer that is a bare tool call states no intent: a copy of it scores
    0 there, and the dataset's perfect score (the bar's base) says so instead of pretending 1."""
    rows = [json.loads(line) for line in sample.read_text().splitlines()]
    bare = next(r for r in rows if r["conversation_id"] == "sim_001" and r["role"] == "assistant")
    bare["reasoning_content"] = "Verify the customer first."
    src = tmp_path / "bare.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shards = tmp_path / "shards"
    traces.build_shards([str(src)], shards, traces.BuildOptions(name="bare"), counter=WordCounter())
    scores = score_run(write_run(tmp_path / "run", shards, answer=oracle), gates="dataset")
    missed = [t for t in scores.per_turn if t["score"] == 0.0]
    assert [(t["conversation_id"], t["turn"]) for t in missed] == [("sim_001", bare["turn"])]
    assert scores.gates.perfect_score == scores.score == round(1 - 1 / scores.turns.scored, 4)
    assert scores.passed is True


def test_models_that_miss_the_dataset_bars_fail_them(tmp_path: Path, sample_shards: Path) -> None:
    long = write_run(
        tmp_path / "long", sample_shards, answer=oracle, tokens=lambda row: 2 * (row.expected_osl_tokens or 0)
    )
    res = osl_gate(long, gates="dataset")
    assert res.passed is False and "above the band" in res.reason
    silent = score_run(write_run(tmp_path / "silent", sample_shards, answer=_silent), gates="dataset")
    assert silent.score == 0.0 and silent.threshold is not None and silent.threshold > 0 and silent.passed is False


def test_gates_off_never_fail_and_say_so(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "run", sample_shards, answer=_silent, tokens=lambda row: 5000)
    scores = score_run(run, gates="off")
    assert scores.score == 0.0 and scores.threshold is None and scores.passed is None
    assert scores.gates.mode == "off" and not scores.gates.official
    osl = osl_gate(run, gates="off")
    assert osl.passed is None and (osl.band.min, osl.band.max) == (None, None)
    assert osl.window.mean == 5000 and osl.reason.startswith("off: the OSL band was not checked")
    runner = CliRunner()
    for gate in ("inline", "osl"):
        official = runner.invoke(cli, ["eval", gate, str(run)])
        assert official.exit_code == 1, official.output  # the official bar says no
        off = runner.invoke(cli, ["eval", gate, str(run), "--gates", "off"])
        assert off.exit_code == 0, off.output
        assert "not an official result" in off.output


def test_dataset_gates_need_expected_counts_and_a_known_mode(tmp_path: Path, sample: Path) -> None:
    shards = tmp_path / "shards"
    traces.build_shards([str(sample)], shards, traces.BuildOptions(name="plain"))  # no tokenizer: no expected counts
    run = write_run(tmp_path / "run", shards, answer=oracle, tokens=lambda row: 100)
    res = osl_gate(run, gates="dataset")
    assert res.passed is None and "rebuild them with --tokenizer" in res.reason
    with pytest.raises(EvalError, match="--gates 'strict' is not a gate mode; choose one of official, dataset, off"):
        score_run(run, gates="strict")


def test_eval_check_refuses_points_judged_by_research_gates(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "c4", sample_shards, answer=oracle)
    score_run(run, gates="dataset")
    osl_gate(run, gates="off")
    gates = next(c for c in check_submission([run]) if c.check == "gates")
    assert not gates.passed
    assert "osl.json by off (accuracy not judged) gates, scores.json by dataset-derived gates" in gates.reason
    assert f"`trajbench eval inline {run}`" in gates.reason
    result = CliRunner().invoke(cli, ["eval", "check", str(run), "--json"])
    assert result.exit_code == 1
    # judged again by the official gates, the point is no longer refused for its gates
    score_run(run)
    osl_gate(run)
    assert next(c for c in check_submission([run]) if c.check == "gates").passed


def test_files_written_before_research_gates_read_as_official(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "run", sample_shards, answer=oracle)
    score_run(run)
    osl_gate(run)
    for name in (SCORES_FILE, OSL_FILE):
        data = json.loads((run / name).read_text())
        del data["gates"]
        (run / name).write_text(json.dumps(data))
    assert gate_verdicts(run).modes == ("official",) and gate_verdicts(run).note == ""


@pytest.mark.slow
def test_the_simulators_oracle_passes_dataset_gates_through_the_cli(tmp_path: Path, sample: Path) -> None:
    shards = tmp_path / "shards"
    traces.build_shards([str(sample)], shards, traces.BuildOptions(name="sim"), counter=SimStepCounter())
    sim = f"--answers oracle --shards {shards} " + " ".join(ZERO_LATENCY)
    out = tmp_path / "run"
    res = CliRunner().invoke(
        cli,
        ["replay", "run", str(shards), "--no-delays", "-c", "2", "--out", str(out), "--sim-args", sim],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    official = gate_verdicts(out)
    assert official.modes == ("official",) and official.osl_pass is False  # the oracle misses the official band
    res = CliRunner().invoke(cli, ["eval", "osl", str(out), "--gates", "dataset"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["eval", "inline", str(out), "--gates", "dataset"])
    assert res.exit_code == 0 and "research gate (dataset-derived) needs" in res.output, res.output
    judged = gate_verdicts(out)
    assert judged.modes == ("dataset",) and judged.inline_pass is True and judged.osl_pass is True
    assert json.loads((out / OSL_FILE).read_text())["window"]["mean"] == judged.osl_mean


@pytest.mark.slow
def test_replay_run_judges_with_the_gates_it_is_given(tmp_path: Path, sample_shards: Path) -> None:
    cfg = RunConfig(
        shards=str(sample_shards),
        concurrency=2,
        inject_delays=False,
        progress="none",
        out=str(tmp_path / "run"),
        sim=config_from_args(["--answers", "oracle", "--shards", str(sample_shards), *ZERO_LATENCY]),
    )
    result = asyncio.run(jobs.scored_run(cfg, "off"))
    assert result.verdict is not None and result.verdict.passed
    assert gate_verdicts(result.run_dir).modes == ("off",)
    assert any("not an official result" in line for line in result.verdict.lines())
