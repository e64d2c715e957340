"""Without --endpoint, `replay run` and `replay sweep` start the simulator `trajbench demo` uses
(one definition, `replay.sim.embedded_config`): oracle answers from the run's shards and the
default step model 64x faster. The run says so in one line, and --sim-args changes any piece.

The commands stop at the job they hand their `RunConfig` to; real runs against this simulator
are in test_cli_config.py and test_readme.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import cli
import jobs
import replay
from replay import RunConfig
from replay.sim import SimConfig, describe, embedded_config


class Captured(Exception):
    def __init__(self, config: RunConfig) -> None:
        self.config = config


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> None:
    async def run(config: RunConfig, gates: str = "official") -> Any:
        raise Captured(config)

    async def sweep(config: RunConfig, *args: Any, **kw: Any) -> Any:
        raise Captured(config)

    monkeypatch.setattr(jobs, "scored_run", run)
    monkeypatch.setattr(jobs, "scored_sweep", sweep)


def config_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[RunConfig, str]:
    with pytest.raises(Captured) as caught:
        cli.cli.main(args=argv, prog_name="trajbench", standalone_mode=False)
    return caught.value.config, capsys.readouterr().out


LINE = (
    "target: embedded simulator — oracle answers from the shards, step model 64× faster; "
    "pass --endpoint to measure a server, --sim-args to change it\n"
)


@pytest.mark.parametrize("command", [["run"], ["sweep", "-c", "1,2", "--out", "sweep"]])
def test_no_endpoint_means_oracle_answers_from_the_shards_64x_faster(
    command: list[str], sample_shards: Path, captured: None, capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = config_of(["replay", command[0], str(sample_shards), *command[1:]], capsys)
    assert config.endpoint is None and out == LINE
    assert config.sim == embedded_config(str(sample_shards.resolve()))
    assert config.sim is not None and (config.sim.answers, config.sim.shards) == (
        "oracle",
        str(sample_shards.resolve()),
    )
    default = SimConfig()
    assert (config.sim.step_base_ms, config.sim.prefill_ms_per_token, config.sim.batch_ms_per_seq) == (
        default.step_base_ms / 64,
        default.prefill_ms_per_token / 64,
        default.batch_ms_per_seq / 64,
    )


def test_sim_args_override_any_piece(sample_shards: Path, captured: None, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", "run", str(sample_shards), "--sim-args", "--answers synthetic --step-base-ms 8 --replicas 2"]
    config, out = config_of(argv, capsys)
    assert config.sim is not None
    assert (config.sim.answers, config.sim.step_base_ms, config.sim.replicas) == ("synthetic", 8.0, 2)
    assert config.sim.prefill_ms_per_token == SimConfig().prefill_ms_per_token / 64  # the pieces not named stay
    assert out == (
        "target: embedded simulator — synthetic answers (mean 400 tokens), a custom step model (--step-base-ms 8, "
        "--prefill-ms-per-token 0.000625, --batch-ms-per-seq 0.0015625), 2 replicas (affinity router); "
        "pass --endpoint to measure a server, --sim-args to change it\n"
    )
    default_speed = "--step-base-ms 8 --prefill-ms-per-token 0.04 --batch-ms-per-seq 0.1"
    back, _ = config_of([*argv[:4], default_speed], capsys)
    assert back.sim is not None and describe(back.sim) == "oracle answers from the shards, the default step model"


def test_an_endpoint_starts_no_simulator_and_says_nothing(
    sample_shards: Path, captured: None, capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = config_of(["replay", "run", str(sample_shards), "--endpoint", "http://127.0.0.1:9"], capsys)
    assert (config.endpoint, config.sim, out) == ("http://127.0.0.1:9", None, "")


def test_describe_names_answers_speed_replicas_and_faults() -> None:
    assert describe(SimConfig()) == "synthetic answers (mean 400 tokens), the default step model"
    zero = SimConfig(step_base_ms=0, prefill_ms_per_token=0, batch_ms_per_seq=0, osl_mean=8, fail_rate=0.05)
    assert describe(zero) == "synthetic answers (mean 8 tokens), zero-latency step model, faults on 5 % of requests"
    slow = SimConfig(step_base_ms=16, prefill_ms_per_token=0.08, batch_ms_per_seq=0.2)
    assert describe(slow) == "synthetic answers (mean 400 tokens), step model 2× slower"


def test_the_demo_uses_the_same_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def sweep(base: RunConfig, *args: Any, **kw: Any) -> Any:
        raise Captured(base)

    monkeypatch.setattr(replay, "run_sweep", sweep)
    with pytest.raises(Captured) as caught:
        asyncio.run(jobs.run_demo(str(tmp_path / "demo"), echo=lambda _: None, scale=0.002))
    assert caught.value.config.sim == embedded_config(str(tmp_path / "demo" / "shards"))
