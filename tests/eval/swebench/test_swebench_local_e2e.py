"""End to end with `--runtime local`: mini-swe-agent against a scripted loopback endpoint on tiny
task repositories, graded locally with the swebench harness's test spec, apply chain and grader.

One run (module scope) serves most tests: `fix` resolves, `break` does not, and an instance whose
task repository is missing stays incomplete. The resume test continues a copy of that run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from toy import ScriptedEndpoint, instance, make_repo, write_jsonl

from cli import cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240), pytest.mark.usefixtures("swebench_extra")]

KEY_ENV = "TRAJBENCH_TEST_SWEBENCH_KEY"
KEY = "sk-test-do-not-write-7f3a9c"
IDS = ["toy__calc-1", "toy__calc-2", "toy__absent-1"]


def _invoke(args: list[str]) -> Any:
    result = CliRunner().invoke(cli, args, env={KEY_ENV: KEY}, catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("swebench")
    repos = tmp / "repos"
    _, base = make_repo(repos)
    rows = [
        instance(IDS[0], "fix", base),
        instance(IDS[1], "break", base),
        instance(IDS[2], "fix", base, repo="toy/absent"),
    ]
    dataset = write_jsonl(
        tmp / "verified.jsonl", [*rows, instance("toy__calc-9", "fix", base)]
    )  # row 4 is beyond --instances
    out = tmp / "run"
    out.mkdir()
    (out / "scores.json").write_text(json.dumps({"score": 0.6, "turns": {"issued": 10}}))
    with ScriptedEndpoint() as endpoint:
        result = _invoke(
            [
                "eval",
                "swebench",
                "--dataset",
                str(dataset),
                "--endpoint",
                endpoint.url,
                "--profile",
                "qwen3.6-35b-a3b",
                "--instances",
                "3",
                "--workers",
                "2",
                "--runtime",
                "local",
                "--repos",
                str(repos),
                "--out",
                str(out),
                "--api-key-env",
                KEY_ENV,
                "--concurrency",
                "16",
            ]
        )
    return {
        "tmp": tmp,
        "repos": repos,
        "base": base,
        "dataset": dataset,
        "out": out,
        "result": result,
        "requests": endpoint.requests,
    }


def test_scores_resolved_unresolved_and_incomplete(toy_run: dict[str, Any]) -> None:
    assert toy_run["result"].exit_code == 0, toy_run["result"].output
    s = json.loads((toy_run["out"] / "swebench_summary.json").read_text())
    assert s["results"] == {IDS[0]: "resolved", IDS[1]: "unresolved", IDS[2]: "incomplete"}
    assert (s["kind"], s["profile"], s["instances"], s["resolved"], s["incomplete"], s["score"]) == (
        "swebench",
        "qwen3.6-35b-a3b",
        3,
        1,
        1,
        0.3333,
    )
    assert (s["runtime"], s["concurrency"], s["isolated"], s["template"]) == ("local", 16, False, "qwen_tools")
    assert s["instance_ids"] == IDS
    # who the endpoint said it was (docs/audits.md): this scripted one answers no GET, so nothing
    assert s["engine"] == {"engine": "unknown", "models": [], "model_path": None, "version": None,
                           "chat_template_sha256": None, "answered": []}  # fmt: skip
    assert "1/3 resolved = 33.33%, 1 unresolved, 1 incomplete" in toy_run["result"].output
    assert "rerun with --resume): toy__absent-1" in toy_run["result"].output


def test_output_says_local_is_not_isolated(toy_run: dict[str, Any]) -> None:
    assert "--runtime local is NOT isolated" in toy_run["result"].output


def test_per_instance_files(toy_run: dict[str, Any]) -> None:
    fixed, broken, absent = (toy_run["out"] / i for i in IDS)
    traj = json.loads((fixed / "trajectory.json").read_text())
    assert traj["info"]["exit_status"] == "Submitted" and traj["trajectory_format"].startswith("mini-swe-agent")
    assert "+    return a + b" in (fixed / "patch.diff").read_text()
    assert "$ sed -i '2s/a - b/a + b/' calc.py" in (fixed / "agent.log").read_text()
    grade = json.loads((fixed / "grade.json").read_text())
    assert grade["status"] == "resolved"
    assert grade["report"]["tests_status"]["FAIL_TO_PASS"]["success"] == ["tests/test_calc.py::test_add"]
    bad = json.loads((broken / "grade.json").read_text())
    assert bad["status"] == "unresolved" and bad["report"]["patch_successfully_applied"] is True
    assert bad["report"]["tests_status"]["PASS_TO_PASS"]["failure"] == ["tests/test_calc.py::test_sub"]
    # the instance without a task repository: a log saying why, no patch, no grade
    assert "no git repository" in (absent / "agent.log").read_text()
    assert not (absent / "patch.diff").exists() and not (absent / "grade.json").exists()


def test_requests_carry_the_profile_and_the_key(toy_run: dict[str, Any]) -> None:
    reqs = toy_run["requests"]
    assert len(reqs) == 4 + 2  # fix: 4 steps, break: 2 steps, absent: none
    for r in reqs:
        b = r["body"]
        assert r["path"] == "/v1/chat/completions" and r["auth"] == f"Bearer {KEY}"
        assert b["model"] == "Qwen/Qwen3.6-35B-A3B"
        assert (b["temperature"], b["top_p"], b["presence_penalty"], b["max_completion_tokens"]) == (
            1.0,
            0.95,
            1.5,
            8192,
        )
        assert (b["top_k"], b["repetition_penalty"], b["chat_template_kwargs"]) == (
            20,
            1.0,
            {"preserve_thinking": True},
        )
        assert b["parallel_tool_calls"] is False
        assert [t["function"]["name"] for t in b["tools"]] == ["bash"]


def test_api_key_is_written_nowhere(toy_run: dict[str, Any]) -> None:
    texts = {p: p.read_bytes() for p in toy_run["out"].rglob("*") if p.is_file()}
    assert texts and not [p for p, t in texts.items() if KEY.encode() in t]
    # the agent did list its environment; the key variable was there, blanked
    assert f"{KEY_ENV}=\\n".encode() in texts[toy_run["out"] / IDS[0] / "trajectory.json"]


def test_scores_json_gets_the_swebench_line_and_keeps_the_rest(toy_run: dict[str, Any]) -> None:
    scores = json.loads((toy_run["out"] / "scores.json").read_text())
    assert scores["score"] == 0.6 and scores["turns"] == {"issued": 10}
    assert scores["swebench"] == {
        "score": 0.3333,
        "resolved": 1,
        "instances": 3,
        "incomplete": 1,
        "profile": "qwen3.6-35b-a3b",
        "runtime": "local",
        "concurrency": 16,
    }


def test_rerun_without_resume_is_refused(toy_run: dict[str, Any]) -> None:
    with ScriptedEndpoint() as endpoint:
        result = CliRunner().invoke(
            cli,
            [
                "eval",
                "swebench",
                "--dataset",
                str(toy_run["dataset"]),
                "--endpoint",
                endpoint.url,
                "--profile",
                "qwen3.6-35b-a3b",
                "--instances",
                "3",
                "--runtime",
                "local",
                "--repos",
                str(toy_run["repos"]),
                "--out",
                str(toy_run["out"]),
            ],
        )
    assert result.exit_code != 0 and "already holds a SWE-bench run; pass --resume" in str(result.exception)
    assert endpoint.requests == []


def test_resume_skips_graded_grades_finished_and_reruns_incomplete(toy_run: dict[str, Any]) -> None:
    tmp: Path = toy_run["tmp"]
    out = tmp / "resumed"
    shutil.copytree(toy_run["out"], out)
    repos = tmp / "repos2"
    shutil.copytree(toy_run["repos"], repos)
    shutil.copytree(repos / "toy__calc", repos / "toy__absent")  # the missing task repository appears
    (out / IDS[1] / "grade.json").unlink()  # agent finished, grading interrupted
    graded_before = (out / IDS[0] / "grade.json").read_bytes()
    with ScriptedEndpoint() as endpoint:
        result = _invoke(
            [
                "eval",
                "swebench",
                "--dataset",
                str(toy_run["dataset"]),
                "--endpoint",
                endpoint.url,
                "--profile",
                "qwen3.6-35b-a3b",
                "--instances",
                "3",
                "--runtime",
                "local",
                "--repos",
                str(repos),
                "--out",
                str(out),
                "--resume",
                "--api-key-env",
                KEY_ENV,
                "--concurrency",
                "16",
            ]
        )
    assert result.exit_code == 0, result.output
    assert "resume: 1 instance(s) already graded, 1 to grade, 1 to run" in result.output
    # only the incomplete instance's agent ran again (the fix script: 4 requests)
    assert len(endpoint.requests) == 4
    assert (out / IDS[0] / "grade.json").read_bytes() == graded_before
    s = json.loads((out / "swebench_summary.json").read_text())
    assert s["results"] == {IDS[0]: "resolved", IDS[1]: "unresolved", IDS[2]: "resolved"}
    assert (s["resolved"], s["incomplete"], s["score"]) == (2, 0, 0.6667)


def test_resume_must_continue_the_same_run(toy_run: dict[str, Any]) -> None:
    out = toy_run["tmp"] / "other"
    shutil.copytree(toy_run["out"], out)
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "swebench",
            "--dataset",
            str(toy_run["dataset"]),
            "--endpoint",
            "http://127.0.0.1:9",
            "--profile",
            "kimi-k3",
            "--instances",
            "3",
            "--runtime",
            "local",
            "--repos",
            str(toy_run["repos"]),
            "--out",
            str(out),
            "--resume",
        ],
    )
    assert result.exit_code != 0 and "profile 'qwen3.6-35b-a3b' -> 'kimi-k3'" in str(result.exception)
