"""`profiles derive` (docs/maintainers.md): a profile's gates from reference runs, by a rule that
gives back the official bands from their centres; and how `eval check` treats a profile that is
not a built-in one."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path

import pytest
from evalruns import perfect, write_run

import traces
from eval import DEFAULT_INLINE_FRACTION, EvalError, derive_profile, osl_band_from
from eval.compliance import check_submission
from replay import read_run_info


@pytest.mark.parametrize(("centre", "official"), [(432.5, (390, 475)), (394.5, (355, 434))])
def test_the_rule_gives_the_official_bands_from_their_centres_within_a_token(
    centre: float, official: tuple[int, int]
) -> None:
    lo, hi = osl_band_from(centre)  # the default: ± 10 %
    assert abs(lo - official[0]) <= 1 and abs(hi - official[1]) <= 1
    assert osl_band_from(400, 0.05) == (380.0, 420.0)
    with pytest.raises(EvalError, match="between 0 and 1 "):
        osl_band_from(400, 1.5)
    with pytest.raises(EvalError, match=r"for 10 % write 0\.1"):  # the old unit, a percent, is told apart
        osl_band_from(400, 10)


def test_unofficial_reference_runs_are_refused_unless_told(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(
        tmp_path / "ref", sample_shards, answer=perfect, tokens=lambda row: 430, salt="strong", inject_delays=False
    )
    with pytest.raises(EvalError) as err:
        derive_profile([run], "my-k3")
    msg = str(err.value)
    assert "salt mode 'strong', not mlperf" in msg and "recorded delays were skipped" in msg
    assert "it has no performance/result_summary.json" in msg  # a run that did not finish is a partial run
    assert "--allow-unofficial" in msg

    got = derive_profile([run], "my-k3", allow_unofficial=True)
    prof = got.profile
    assert got.osl_mean == 430 and got.inline_score == 1.0
    assert (prof.thresholds.osl_min, prof.thresholds.osl_max) == osl_band_from(430)
    assert prof.thresholds.inline == DEFAULT_INLINE_FRACTION
    assert prof.thresholds.swebench is None
    base = traces.get_profile("kimi-k3")
    assert (prof.sampling, prof.tokenizer, prof.served_model_name) == (
        base.sampling,
        base.tokenizer,
        base.served_model_name,
    )
    d = prof.derivation
    assert d is not None and d["official_shaped"] is False and len(d["unofficial"]) == 3
    assert d["reference"]["runs"] == ["ref"]  # the folder's name only, never a path of this machine
    assert str(tmp_path) not in json.dumps(d)
    assert traces.check_profile(prof.name, {k: v for k, v in prof.content().items() if k != "name"}) == []


def test_a_derived_profile_needs_a_name_of_its_own(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "ref", sample_shards, answer=perfect)
    with pytest.raises(EvalError, match="--name kimi-k3: a built-in profile"):
        derive_profile([run], "kimi-k3", allow_unofficial=True)
    with pytest.raises(EvalError, match=r"--inline-fraction 1\.5: must be a fraction"):
        derive_profile([run], "x", inline_fraction=1.5)


def test_a_user_profile_run_is_judged_by_its_recorded_profile_and_is_never_official(
    tmp_path: Path, sample_shards: Path
) -> None:
    mine = dataclasses.replace(traces.get_profile("kimi-k3"), name="mine", source="mine.yaml")
    run = write_run(tmp_path / "c4", sample_shards, answer=perfect, tokens=lambda row: 430)
    info = read_run_info(run)  # as a run with the file loaded recorded it; the file is not loaded here
    replace(
        info, profile="mine", profile_content=mine.content(), profile_hash=mine.content_hash(), profile_built_in=False
    ).write(run)
    checks = {c.check: c for c in check_submission([run], expected_hash=traces.Shards(sample_shards).content_hash)}
    off = checks["official-profile"]
    assert not off.passed and "profile mine is a user profile" in off.reason and "not an official result" in off.reason
    assert checks["dataset"].passed and checks["inline"].passed and checks["osl"].passed
    no_registry = {c.check: c for c in check_submission([run])}["dataset"]
    assert not no_registry.passed and "no published hash known for mine" in no_registry.reason
    assert "--registry FILE" in no_registry.reason


def test_a_built_in_profile_changed_since_the_run_is_seen(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "c4", sample_shards, answer=perfect, tokens=lambda row: 430, profile_hash="0" * 64)
    check = {c.check: c for c in check_submission([run])}["official-profile"]
    assert not check.passed and "differs from this trajbench's" in check.reason


def test_a_simulated_reference_run_is_refused_and_the_refusal_says_it_was_simulated(
    tmp_path: Path, sample_shards: Path
) -> None:
    for evidence in ("the embedded simulator (no --endpoint)", "X-Simulated: trajbench-sim on /v1/models"):
        run = write_run(
            tmp_path / "ref", sample_shards, answer=perfect, tokens=lambda row: 430,
            target="simulated", target_evidence=evidence,
        )  # fmt: skip
        with pytest.raises(EvalError) as err:
            derive_profile([run], "my-k3")
        msg = str(err.value)
        assert "ref: it was simulated: measured against trajbench's simulator" in msg and evidence in msg
        assert "--allow-unofficial" in msg
    got = derive_profile([run], "my-k3", allow_unofficial=True)  # told: derived, and recorded as not official
    assert got.profile.derivation is not None and got.profile.derivation["official_shaped"] is False
    assert any("it was simulated" in why for why in got.unofficial)


def test_a_reference_inline_score_of_0_says_the_answers_did_not_match_the_dataset(
    tmp_path: Path, sample_shards: Path
) -> None:
    def wrong(row: traces.TurnRow) -> dict[str, object]:
        call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": '{"command": "vim x"}'}}
        return {"content": "intent: I999", "reasoning": "", "tool_calls": [call]}

    run = write_run(tmp_path / "ref", sample_shards, answer=wrong, tokens=lambda row: 430)
    with pytest.raises(EvalError) as err:
        derive_profile([run], "my-k3", allow_unofficial=True)
    msg = str(err.value)
    assert "inline score is 0: none of the reference model's answers matched the dataset's recorded ones" in msg
    assert "write 0.55 for 55 %" not in msg and "eval inline" in msg


def test_the_osl_tolerance_is_a_fraction_everywhere(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "ref", sample_shards, answer=perfect, tokens=lambda row: 400)
    got = derive_profile([run], "my-k3", osl_tolerance=0.05, allow_unofficial=True)
    t = got.profile.thresholds
    assert (t.osl_min, t.osl_max) == (380.0, 420.0)  # ± 5 %, not ± 0.05 %
    assert got.profile.derivation is not None and got.profile.derivation["osl_tolerance"] == 0.05
    with pytest.raises(EvalError, match=r"for 5 % write 0\.05"):
        derive_profile([run], "my-k3", osl_tolerance=5, allow_unofficial=True)
