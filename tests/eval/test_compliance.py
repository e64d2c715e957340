"""The compliance check of a submission (docs/compliance.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalruns import official_run, perfect, write_run

import traces
from eval import EvalError, score_run
from eval.compliance import check_submission, compliance_json, official_hash
from replay import EngineIdentity


def swebench_dirs(root: Path, scores: list[float], *, instances: int = 200, profile: str = "kimi-k3") -> list[Path]:
    out = []
    for k, s in enumerate(scores):
        d = root / f"swe-{k}"
        d.mkdir(parents=True)
        (d / "swebench_summary.json").write_text(
            json.dumps(
                {
                    "kind": "swebench",
                    "profile": profile,
                    "instances": instances,
                    "resolved": round(s * instances),
                    "incomplete": 0,
                    "score": s,
                    "concurrency": 2**k,
                    "runtime": "docker",
                    "model": traces.get_profile(profile).served_model_name,
                    "engine": traces.to_json(ENGINE),
                }
            )
        )
        out.append(d)
    return out


#: Who the endpoint said it was, in every run.json and SWE-bench summary of a compliant submission.
ENGINE = EngineIdentity("vllm", ["moonshotai/Kimi-K3"], "/models/kimi-k3", "0.11.0", None, ["GET /v1/models"])

AUDITS = {"cache-exploit", "warm-cache", "output-consistency", "same-model"}


def by_check(checks, point: str) -> dict[str, Any]:
    return {c.check: c for c in checks if Path(c.point).name == point}


def test_a_compliant_submission_passes_every_check(tmp_path: Path, sample_shards: Path) -> None:
    # the cache audits count prompts with the run's tokenizer: one that loads offline
    run = official_run(tmp_path / "c4", sample_shards, tokenizer="qwen3.6", engine=ENGINE)
    swe = swebench_dirs(tmp_path, [0.94, 0.935, 0.94, 0.95])
    checks = check_submission([run], swebench=swe, expected_hash=traces.Shards(sample_shards).content_hash)
    failed = [c for c in checks if not c.passed]
    assert failed == []
    assert {c.check for c in checks} == {
        "official-profile",
        "target",
        "gates",
        "salt",
        "delays",
        "stop-issuing",
        "trajectories",
        "sampling",
        "inline",
        "osl",
        "dataset",
        "seal",
        "complete",
        "recomputed",
        "failure-budget",
        "client-tokens",
        "swebench",
        *AUDITS,
    }
    assert compliance_json(checks)["passed"] is True


def test_a_model_with_other_answers_and_wrong_settings_fails_with_reasons(tmp_path: Path, sample_shards: Path) -> None:
    def other(row: traces.TurnRow) -> dict[str, Any]:
        call = {"id": "x", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}
        return {"content": "intent: I999", "reasoning": "", "tool_calls": [call]}

    params = {
        **traces.get_profile("kimi-k3").request_params(),
        "temperature": 0.6,
        "seed": 1,
        "model": "x",
        "stream": True,
    }
    run = write_run(
        tmp_path / "bad",
        sample_shards,
        answer=other,
        tokens=lambda row: 200,
        salt="strong",
        inject_delays=False,
        stop_issuing_on_first_user_complete=True,
        num_trajectories=6,
        request_params=params,
        target="simulated",
        target_evidence="GET /health says simulated",
        engine=None,
    )
    score_run(run, gates="dataset")  # judged by research gates: never an official point
    checks = check_submission([run], swebench=swebench_dirs(tmp_path, [0.9] * 4))
    c = by_check(checks, "bad")
    assert c["official-profile"].passed  # the built-in kimi-k3, unchanged
    assert not any(x.passed for name, x in c.items() if name not in {"official-profile", "failure-budget", *AUDITS})
    # its run.json says nothing of the engine (written so), and its tokenizer (kimi) needs local files
    assert "run.json records no engine identity" in by_check(checks, "submission")["same-model"].reason
    assert c["cache-exploit"].reason.startswith("could not run: its cache analysis (`trajbench analyze cache`) failed")
    assert c["failure-budget"].passed  # every turn answered
    assert c["gates"].reason.startswith("judged by research gates (scores.json by dataset-derived gates)")
    assert c["target"].reason == (
        "measured against trajbench's simulator (GET /health says simulated); "
        "official points need a real inference server"
    )
    assert "salt mode 'strong'" in c["salt"].reason
    assert "inject_delays is False" in c["delays"].reason
    assert "stop_issuing_on_first_user_complete is True" in c["stop-issuing"].reason
    assert c["trajectories"].reason == "6 trajectories is not a positive multiple of the dataset size 4"
    assert c["sampling"].reason == "temperature=0.6 (profile: 1.0); seed=1 is not in the profile"
    assert c["inline"].reason.startswith("score ") and "vs >= 58.32%" in c["inline"].reason
    assert "below the band 390-475" in c["osl"].reason
    assert c["dataset"].reason.startswith("no official hash known for kimi-k3: ")
    assert "pass --expected-hash HASH" in c["dataset"].reason and "docs/submitting.md" in c["dataset"].reason
    swe = by_check(checks, "submission")["swebench"]
    assert not swe.passed and swe.reason == "mean 90.00% < 93.50%"
    assert compliance_json(checks)["failed"] == len([x for x in checks if not x.passed])


def test_unfinished_run_and_changed_shards_fail(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(
        tmp_path / "r", sample_shards, answer=perfect, tokens=lambda row: 430, num_trajectories=8, content_hash="0" * 64
    )
    c = by_check(check_submission([run], expected_hash="f" * 64), "r")
    assert c["trajectories"].reason == "4 of 8 trajectory instances were started; the run did not finish"
    assert "run.json content_hash 0000000000000000… differs from the shards'" in c["dataset"].reason
    run2 = write_run(tmp_path / "r2", sample_shards, answer=perfect, tokens=lambda row: 430)
    c2 = by_check(check_submission([run2], expected_hash="f" * 64), "r2")
    assert c2["dataset"].reason.endswith("is not the expected ffffffffffffffff…")


@pytest.mark.parametrize(
    ("scores", "instances", "profile", "reason"),
    [
        ([0.95] * 3, 200, "kimi-k3", "3 run(s); the official figure is the mean of 4 (one per concurrency region)"),
        ([0.95] * 4, 199, "kimi-k3", "swe-0: 199 instances; official runs use 200"),
        (
            [0.95] * 4,
            200,
            "qwen3.6-35b-a3b",
            "SWE-bench runs are for profile qwen3.6-35b-a3b, the submission is kimi-k3",
        ),
    ],
)
def test_swebench_needs_four_runs_of_200_for_the_same_model(
    tmp_path: Path, sample_shards: Path, scores, instances, profile, reason
) -> None:
    run = write_run(tmp_path / "r", sample_shards, answer=perfect, tokens=lambda row: 430)
    swe = swebench_dirs(tmp_path / "swe", scores, instances=instances, profile=profile)
    check = by_check(check_submission([run], swebench=swe), "submission")["swebench"]
    assert not check.passed and reason in check.reason


def test_no_swebench_and_mixed_profiles(tmp_path: Path, sample_shards: Path) -> None:
    a = write_run(tmp_path / "a", sample_shards, answer=perfect, tokens=lambda row: 430)
    b = write_run(tmp_path / "b", sample_shards, answer=perfect, tokens=lambda row: 400, profile="qwen3.6-35b-a3b")
    sub = by_check(check_submission([a, b]), "submission")
    assert sub["swebench"].reason.startswith("no SWE-bench results; pass --swebench DIR")
    assert "different profiles" in sub["profile"].reason


def test_errors_and_official_hash_table(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="no run folder given"):
        check_submission([])
    assert official_hash("kimi-k3") is None
    assert official_hash("no-such-profile") is None


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    from cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_cli_check_prints_a_table_and_exits_nonzero_on_failure(
    tmp_path: Path, sample_shards: Path, capsys, monkeypatch
) -> None:
    run = official_run(tmp_path / "c4", sample_shards, tokenizer="qwen3.6", engine=ENGINE)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["eval", "check", "c4"], capsys)
    assert code == 1
    assert "c4" in out and "sampling" in out and "no official hash known" in out and "warm-cache" in out
    assert err.startswith("Error: 2 of 21 compliance checks failed")  # dataset hash and SWE-bench
    swe = [str(d) for d in swebench_dirs(tmp_path, [0.95] * 4)]
    args = ["eval", "check", str(run), "--expected-hash", traces.Shards(sample_shards).content_hash, "--json"]
    for d in swe:
        args += ["--swebench", d]
    code, out, _ = _cli(args, capsys)
    assert code == 0 and json.loads(out)["passed"] is True


def test_cli_inline_osl_and_profiles(tmp_path: Path, sample_shards: Path, capsys) -> None:
    run = write_run(tmp_path / "r", sample_shards, answer=perfect, tokens=lambda row: 300)
    code, out, _ = _cli(["eval", "inline", str(run)], capsys)
    assert code == 0 and "inline score 1.0000" in out and "PASS" in out
    code, out, _ = _cli(["eval", "osl", str(run)], capsys)
    assert code == 1 and "90.00 tokens below the band 390-475" in out
    code, out, _ = _cli(["profiles", "--json"], capsys)
    assert code == 0 and json.loads(out)["qwen3.6-35b-a3b"]["sampling"]["top_k"] == 20
    code, out, _ = _cli(["profiles"], capsys)
    assert code == 0 and "kimi-k3" in out and "390-475" in out


def test_unreadable_swebench_folder_fails_the_check_with_the_reason(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "r", sample_shards, answer=perfect, tokens=lambda row: 430)
    empty = tmp_path / "swe-empty"
    empty.mkdir()
    check = by_check(check_submission([run], swebench=[empty]), "submission")["swebench"]
    assert not check.passed and "swebench_summary.json: not found" in check.reason
