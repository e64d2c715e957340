"""The OSL gate: mean output tokens per turn against the profile's band (docs/accuracy.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalruns import client_turns, oracle, record, write_run

import traces
from eval import OSL_FILE, osl_gate
from eval import osl_lines as summary_lines


def test_perfect_model_mean_equals_the_datasets_expected_mean(tmp_path: Path, coding_shards: Path) -> None:
    res = osl_gate(write_run(tmp_path / "run", coding_shards)).to_json()
    for pop in ("window", "all"):
        assert res[pop]["mean"] == res[pop]["expected_mean"]
        assert res[pop]["counted"] == res[pop]["server_counted"] == client_turns(coding_shards)
    # the word counter's answers are far shorter than Kimi K3's band: the gate says by how much
    assert res["passed"] is False
    assert res["window"]["outside_by"] == round(res["window"]["mean"] - 390, 2)
    assert "tokens below the band 390-475" in res["reason"]
    assert json.loads((tmp_path / "run" / OSL_FILE).read_text()) == res


def test_in_band_and_above_band(tmp_path: Path, sample_shards: Path) -> None:
    ok = osl_gate(write_run(tmp_path / "a", sample_shards, tokens=lambda row: 430)).to_json()
    assert ok["passed"] is True and ok["window"]["in_band"] is True and ok["window"]["outside_by"] == 0.0
    assert "inside the band" in ok["reason"]
    high = osl_gate(write_run(tmp_path / "b", sample_shards, tokens=lambda row: 500)).to_json()
    assert high["passed"] is False and high["window"]["outside_by"] == 25.0
    assert "25.00 tokens above the band 390-475" in high["reason"]


def test_profile_band_is_the_one_given(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "run", sample_shards, tokens=lambda row: 440)
    assert osl_gate(run).passed is True  # kimi-k3: 390-475
    qwen = osl_gate(run, profile="qwen3.6-35b-a3b")  # 355-434
    assert qwen.passed is False and (qwen.band.min, qwen.band.max) == (355, 434)
    k26 = osl_gate(run, profile="kimi-k2.6").to_json()
    assert k26["passed"] is None and "no official OSL band" in k26["reason"]


def test_the_gate_counts_as_the_reference_when_a_tokenizer_is_available(tmp_path: Path, sample_shards: Path) -> None:
    rows = [row for inst in traces.Shards(sample_shards) for row in inst.turns]
    recs = [
        record(rows[0], oracle(rows[0]), tokens=400, client_tokens=410),
        record(rows[1], oracle(rows[1]), tokens=None, client_tokens=420),
    ]
    res = osl_gate(write_run(tmp_path / "run", sample_shards, records=recs)).to_json()
    assert res["method"] == "client-tokenizer"  # the run recorded the reference's counts
    w = res["window"]
    assert (w["mean"], w["client_mean"], w["server_mean"]) == (415.0, 415.0, 400.0)  # both ways recorded
    assert (w["server_counted"], w["client_counted"]) == (1, 2)
    assert w["client_minus_server_mean"] == 10.0


def test_server_usage_when_no_tokenizer_is_available(tmp_path: Path, sample_shards: Path) -> None:
    rows = [row for inst in traces.Shards(sample_shards) for row in inst.turns]
    res = osl_gate(
        write_run(tmp_path / "run", sample_shards, records=[record(rows[0], oracle(rows[0]), tokens=400)])
    ).to_json()
    assert (res["method"], res["tokenizer"], res["window"]["mean"]) == ("server-usage", None, 400.0)


@pytest.mark.slow
def test_eval_osl_recounts_with_a_given_tokenizer(tmp_path: Path, sample_shards: Path) -> None:
    from traces.tokenizers import load_tokenizer

    rows = [row for inst in traces.Shards(sample_shards) for row in inst.turns][:3]
    recs = [record(r, oracle(r), tokens=999) for r in rows]
    res = osl_gate(write_run(tmp_path / "run", sample_shards, records=recs), tokenizer="qwen3.6").to_json()
    qwen = load_tokenizer("qwen3.6")
    want = [
        qwen.output_tokens(
            {"content": o["content"], "reasoning_content": o["reasoning"], "tool_calls": o["tool_calls"]}
        )
        for o in map(oracle, rows)
    ]
    assert res["method"] == "client-tokenizer" and res["tokenizer"] == "qwen3.6"
    assert res["window"]["client_mean"] == round(
        sum(n for n in want if n is not None) / sum(1 for n in want if n is not None), 2
    )
    assert res["window"]["server_mean"] == 999.0


def test_no_token_counts_fails_with_the_fix(tmp_path: Path, sample_shards: Path) -> None:
    res = osl_gate(write_run(tmp_path / "run", sample_shards, tokens=lambda row: None)).to_json()
    assert res["passed"] is False
    assert "rerun `trajbench eval osl` with --tokenizer" in res["reason"]
    assert res["window"]["uncounted"] == res["window"]["turns"]


def test_failed_turns_are_counted_not_averaged_and_window_decides(tmp_path: Path, sample_shards: Path) -> None:
    rows = [row for inst in traces.Shards(sample_shards) for row in inst.turns]
    recs = [record(r, oracle(r), tokens=400, in_window=True) for r in rows[:4]]
    recs.append(record(rows[4], oracle(rows[4]), error_kind="http"))
    recs += [record(r, oracle(r), tokens=100, in_window=False) for r in rows[5:9]]
    gate = osl_gate(write_run(tmp_path / "run", sample_shards, records=recs))
    res = gate.to_json()
    assert (res["window"]["mean"], res["window"]["failed"], res["window"]["turns"]) == (400.0, 1, 5)
    assert (res["all"]["mean"], res["all"]["failed"]) == (250.0, 1)
    assert res["passed"] is True and res["all"]["in_band"] is False
    text = "\n".join(summary_lines(gate))
    assert "PASS" in text and "outside by -140.00" in text
