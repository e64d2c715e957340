"""The docker runtime up to the point of needing an engine: the harness command it runs, and the
clear, immediate error when no Docker engine is reachable. The extra `trajbench[swebench]` (and
docker-py, which it brings) is made present or absent per test (`fake_extra`), so every result is
the same with or without it; only the check of the harness's own command line needs it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import fake_extra
import pytest
from click.testing import CliRunner
from toy import ScriptedEndpoint, instance, write_jsonl

from cli import cli
from eval.swebench import SwebenchError
from eval.swebench.docker import check_engine, harness_command, model_dir_name


def test_harness_command_is_the_swebench_cli() -> None:
    cmd = harness_command(
        dataset=Path("run/harness_instances.jsonl"),
        predictions=Path("run/preds.json"),
        instance_ids=["a__b-1", "c__d-2"],
        run_id="trajbench-x",
        workers=4,
        timeout=900,
    )
    assert cmd[:3] == [sys.executable, "-m", "swebench.harness.run_evaluation"]
    args = " ".join(cmd[3:])
    assert "--dataset_name run/harness_instances.jsonl --split test --predictions_path run/preds.json" in args
    assert "--instance_ids a__b-1 c__d-2 --max_workers 4 --run_id trajbench-x --timeout 900" in args
    assert model_dir_name("Qwen/Qwen3.6-35B-A3B") == "Qwen__Qwen3.6-35B-A3B"


@pytest.mark.slow
def test_harness_accepts_the_command_line() -> None:
    """The harness's own parser knows every option we pass (its --help lists them)."""
    import subprocess

    # the third-party harness itself (a bare "swebench" would find this test folder on sys.path)
    pytest.importorskip(
        "swebench.harness", reason="the SWE-bench extra is not installed: pip install 'trajbench[swebench]'"
    )

    done = subprocess.run(
        [sys.executable, "-m", "swebench.harness.run_evaluation", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0
    for flag in (
        "--dataset_name",
        "--split",
        "--predictions_path",
        "--instance_ids",
        "--max_workers",
        "--run_id",
        "--timeout",
        "--report_dir",
    ):
        assert flag in done.stdout


def test_unreachable_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSWEA_DOCKER_EXECUTABLE", "true")  # a CLI that exists; the engine does not
    fake_extra.unreachable_docker(monkeypatch, "Error while fetching server API version: Connection refused")
    with pytest.raises(
        SwebenchError,
        match=r"no Docker engine reachable \(Error while fetching server API version: Connection refused\): "
        r"the docker runtime .*start Docker .*--runtime local --repos DIR",
    ):
        check_engine()


def test_missing_docker_cli_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSWEA_DOCKER_EXECUTABLE", "trajbench-no-such-docker")
    with pytest.raises(SwebenchError, match=r"no `trajbench-no-such-docker` command on PATH"):
        check_engine()


def test_default_runtime_is_docker_and_fails_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_extra.present(monkeypatch)  # the engine check comes before any use of the extra
    monkeypatch.setenv("MSWEA_DOCKER_EXECUTABLE", "true")
    fake_extra.unreachable_docker(monkeypatch, "Connection refused")
    dataset = write_jsonl(tmp_path / "v.jsonl", [instance("toy__calc-1", "fix", "0" * 40)])
    with ScriptedEndpoint() as endpoint:
        result = CliRunner().invoke(
            cli,
            [
                "eval",
                "swebench",
                "--dataset",
                str(dataset),
                "--endpoint",
                endpoint.url,
                "--profile",
                "kimi-k3",
                "--instances",
                "1",
                "--out",
                str(tmp_path / "out"),
            ],
        )
    assert result.exit_code != 0
    assert isinstance(result.exception, SwebenchError)
    assert str(result.exception).startswith("no Docker engine reachable (Connection refused): the docker runtime")
    assert endpoint.requests == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra", [fake_extra.present, fake_extra.absent])
def test_local_runtime_needs_repos(extra: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra(monkeypatch)  # the options are checked first, with or without the extra
    dataset = write_jsonl(tmp_path / "v.jsonl", [instance("toy__calc-1", "fix", "0" * 40)])
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "swebench",
            "--dataset",
            str(dataset),
            "--endpoint",
            "http://127.0.0.1:9",
            "--profile",
            "kimi-k3",
            "--runtime",
            "local",
        ],
    )
    assert "--runtime local needs --repos DIR" in str(result.exception)
