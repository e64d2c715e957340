"""Starting and stopping the simulator as a child process; the serve-sim command's surface."""

from __future__ import annotations

import httpx
import pytest
from click.testing import CliRunner

from cli import cli, main
from replay.sim import SimConfig, SimulatorStartError, start_simulator
from traces.tokenizers import load_tokenizer


def test_start_serve_and_stop() -> None:
    with start_simulator(SimConfig(replicas=2, model="served-name")) as sim:
        assert sim.base_url.startswith("http://127.0.0.1:")
        assert sim.health()["replicas"] == 2
        assert httpx.get(sim.base_url + "/v1/models").json()["data"][0]["id"] == "served-name"
        assert set(sim.metrics()["num_requests_running"]) == {"0", "1"}
        proc = sim.process
    assert proc.poll() is not None  # stopped on exit


def test_a_child_that_dies_reports_its_stderr() -> None:
    with pytest.raises(SimulatorStartError, match=r"(?s)exited with code 1.*needs --shards"):
        with start_simulator(["--answers", "oracle"]):
            pass


def test_oracle_without_a_shard_folder_fails_clearly(tmp_path) -> None:
    with pytest.raises(SimulatorStartError, match=r"no manifest\.json"):
        with start_simulator(["--answers", "oracle", "--shards", str(tmp_path)]):
            pass


def test_serve_sim_cli_options(capsys: pytest.CaptureFixture[str]) -> None:
    result = CliRunner().invoke(cli, ["serve-sim", "--help"])
    assert result.exit_code == 0
    for option in ("--replicas", "--router", "--fail-kinds", "--cache-tokens", "--answers", "--tokenizer"):
        assert option in result.output
    with pytest.raises(SystemExit) as exit_info:
        main(["serve-sim", "--fail-rate", "2"])
    assert exit_info.value.code == 1 and "Error: simulator option: --fail-rate" in capsys.readouterr().err
    assert CliRunner().invoke(cli, ["serve-sim", "--router", "random"]).exit_code == 2


@pytest.mark.slow
def test_registry_tokenizer_counts_the_prompt(start_sim) -> None:
    tok = load_tokenizer("qwen3.6")
    url = start_sim(tokenizer="qwen3.6", step_base_ms=0.0, prefill_ms_per_token=0.0, batch_ms_per_seq=0.0).base_url
    messages = [
        {"role": "system", "content": "You are a careful engineer. " * 40},
        {"role": "user", "content": "Fix parser.py"},
    ]
    with httpx.Client(timeout=30) as client:
        first, second = (
            client.post(url + "/v1/chat/completions", json={"messages": messages, "max_completion_tokens": 3}).json()[
                "usage"
            ]
            for _ in range(2)
        )
    # rendered with the tokenizer's chat template, as an engine does: the client's count agrees
    assert first["prompt_tokens"] == tok.count_messages(messages, None)
    assert first["prompt_tokens_details"]["cached_tokens"] == 0 < second["prompt_tokens_details"]["cached_tokens"]
    assert httpx.get(url + "/health").json()["tokenizer"] == "qwen3.6"


def test_serve_sim_is_as_quick_as_the_embedded_simulator_unless_told_realistic() -> None:
    """A standalone simulator is as quick to try as the embedded one; the realistic pacing (the
    default step model, a mid-size GPU server) is one flag away, and a coefficient given wins."""
    from replay.sim import SimConfig, describe, embedded_config, standalone_config

    quick = standalone_config({})
    assert describe(quick) == "synthetic answers (mean 400 tokens), step model 64× faster"
    for name in ("step_base_ms", "prefill_ms_per_token", "batch_ms_per_seq"):
        assert getattr(quick, name) == getattr(embedded_config("shards"), name) == getattr(SimConfig(), name) / 64
    assert standalone_config({}, realistic=True) == SimConfig()
    assert standalone_config({"step_base_ms": 2.0}).step_base_ms == 2.0
    assert standalone_config({"step_base_ms": 2.0}, realistic=True).step_base_ms == 2.0


@pytest.mark.parametrize(
    ("flags", "said"), [([], "step model 64× faster"), (["--realistic"], "the default step model")]
)
@pytest.mark.slow
def test_serve_sim_says_how_fast_it_answers(flags: list[str], said: str) -> None:
    from reliability_helpers import cli_process

    proc = cli_process(["serve-sim", "--port", "0", *flags])
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert line.startswith(f"trajbench-sim (synthetic answers (mean 400 tokens), {said}) listening on http://"), line
