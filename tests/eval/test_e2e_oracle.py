"""End to end: a real replay of the coding shards (synthetic coding trajectories plus one with
unscorable answers) against the simulator's oracle (a perfect model), then the eval gates on the
run folder it wrote.

The shards are built with a counter that counts an answer the way the simulator streams it (one
decode step per 4 characters of reasoning, content and tool arguments, plus one step per tool
call name; an empty answer still costs one step), so the dataset's expected OSL and the server's
usage are the same measure and the OSL mean must equal the expected mean exactly.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from evalruns import SimStepCounter, client_turns

import traces
from eval import check_submission, osl_gate, score_run
from replay import RunConfig, read_records, read_run_info, run_replay
from replay.sim import config_from_args

#: the oracle replay of the coding shards' few hundred long turns takes seconds to tens of seconds
slow = pytest.mark.slow

ZERO_LATENCY = ("--step-base-ms", "0", "--prefill-ms-per-token", "0", "--batch-ms-per-seq", "0")


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory, coding_sources: list[Path]) -> Path:
    root = tmp_path_factory.mktemp("e2e")
    shards = root / "shards"
    traces.build_shards(
        [str(p) for p in coding_sources], shards, traces.BuildOptions(name="coding"), counter=SimStepCounter()
    )
    cfg = RunConfig(
        shards=str(shards),
        concurrency=8,
        inject_delays=False,
        progress="none",
        out=str(root / "run"),
        turn_timeout=60.0,
        sim=config_from_args(["--answers", "oracle", "--shards", str(shards), *ZERO_LATENCY]),
    )
    return asyncio.run(run_replay(cfg))


@slow
def test_perfect_model_scores_one_on_every_scorable_turn(oracle_run: Path) -> None:
    res = score_run(oracle_run).to_json()
    t = res["turns"]
    issued = client_turns(Path(read_run_info(oracle_run).shards))
    assert t["issued"] == issued and t["missing"] == 0
    assert res["score"] == 1.0 and all(p["score"] == 1.0 for p in res["per_turn"])
    assert 0 < len(res["excluded_turns"]) and t["scored"] == issued - len(res["excluded_turns"])
    assert json.loads((oracle_run / "scores.json").read_text())["score"] == 1.0


@slow
def test_perfect_model_osl_mean_equals_the_expected_mean(oracle_run: Path) -> None:
    res = osl_gate(oracle_run).to_json()
    for pop in ("window", "all"):
        assert res[pop]["counted"] == res[pop]["server_counted"] > 0
        assert res[pop]["mean"] == res[pop]["expected_mean"]
    assert res["all"]["counted"] == client_turns(Path(read_run_info(oracle_run).shards))


@pytest.mark.slow
def test_a_model_with_other_answers_fails_inline_and_the_check_says_why(tmp_path: Path, sample_shards: Path) -> None:

    cfg = RunConfig(
        shards=str(sample_shards),
        concurrency=2,
        inject_delays=False,
        progress="none",
        out=str(tmp_path / "run"),
        turn_timeout=60.0,
        sim=config_from_args(["--answers", "synthetic", "--osl-mean", "32", *ZERO_LATENCY]),
    )
    run = asyncio.run(run_replay(cfg))
    res = score_run(run).to_json()
    assert res["turns"]["missing"] == 0 and res["score"] < res["threshold"] and res["passed"] is False
    inline = next(c for c in check_submission([run]) if c.check == "inline")
    assert not inline.passed and inline.reason.startswith(f"score {100 * res['score']:.2f}% vs >= 58.32%")


@pytest.mark.slow
def test_failed_and_aborted_turns_of_a_real_run_score_zero(tmp_path: Path, sample_shards: Path) -> None:

    cfg = RunConfig(
        shards=str(sample_shards),
        concurrency=2,
        inject_delays=False,
        progress="none",
        out=str(tmp_path / "run"),
        turn_timeout=60.0,
        sim=config_from_args(
            [
                "--answers",
                "oracle",
                "--shards",
                str(sample_shards),
                "--fail-rate",
                "0.3",
                "--fail-kinds",
                "500,midstream",
                "--seed",
                "3",
                *ZERO_LATENCY,
            ]
        ),
    )
    run = asyncio.run(run_replay(cfg))
    failed = [r for r in read_records(run) if not r.ok]
    res = score_run(run).to_json()
    assert failed, "the seeded faults hit no turn; change --seed"
    bad = [p for p in res["per_turn"] if p.get("missing")]
    assert len(bad) == res["turns"]["missing"] > 0 and all(p["score"] == 0.0 for p in bad)
    assert res["turns"]["aborted_unsent"] == sum(1 for r in failed if r.error_kind == "aborted")
    assert res["score"] < 1.0
