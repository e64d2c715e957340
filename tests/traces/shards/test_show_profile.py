"""`traces show` shows the request of the model the shards were built for (their tokenizer
says which), and says so in one line when it has to fall back to kimi-k3."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import cli
import traces
from traces.tokenizers import load_tokenizer

SAMPLE = Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl"
SHOW = ["--trajectory", "sim_001", "--turn", "1"]


def _show(shards: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], str]:
    cli.main(["traces", "show", str(shards), *SHOW, *extra])
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


@pytest.fixture(scope="module")
def qwen_shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("qwen") / "shards"
    traces.build_shards([str(SAMPLE)], out, traces.BuildOptions(name="q"), counter=load_tokenizer("qwen3.6"))
    return out


def test_shards_counted_with_a_profiles_tokenizer_show_that_profile(
    qwen_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body, err = _show(qwen_shards, capsys)
    qwen = traces.get_profile("qwen3.6-35b-a3b")
    assert err == ""
    assert body["model"] == qwen.served_model_name
    assert {k: body[k] for k in qwen.request_params()} == qwen.request_params()


def test_shards_that_do_not_say_fall_back_to_kimi_k3_with_a_note(
    sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body, err = _show(sample_shards, capsys)
    assert body["model"] == traces.get_profile("kimi-k3").served_model_name
    assert err.splitlines() == [
        "Note: the shards do not say which model they were built for (built without --tokenizer); "
        "showing the kimi-k3 profile's request; choose another with --profile (`trajbench profiles` lists them)"
    ]


def test_an_explicit_profile_wins_without_a_note(qwen_shards: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body, err = _show(qwen_shards, capsys, "--profile", "kimi-k2.6")
    assert err == "" and body["model"] == traces.get_profile("kimi-k2.6").served_model_name


@pytest.mark.parametrize(
    ("tokenizer", "profile", "note"),
    [
        ("qwen3.6", "qwen3.6-35b-a3b", None),
        ("hf:Qwen3.6-35B-A3B", "qwen3.6-35b-a3b", None),  # a local copy of the model's folder
        ("hf:Qwen/Qwen3.6-35B-A3B", "qwen3.6-35b-a3b", None),  # a Hub id from the local cache
        ("hf:Qwen/Qwen3.6-35B-A3B@main", "qwen3.6-35b-a3b", None),
        ("kimi", "kimi-k3", "is shared by the profiles kimi-k2.6, kimi-k3; showing the kimi-k3 profile's request"),
        ("tiktoken:o200k_base", "kimi-k3", "no profile uses the tokenizer the shards were counted with"),
    ],
)
def test_which_profile_a_tokenizer_names(tokenizer: str, profile: str, note: str | None) -> None:
    shards: Any = SimpleNamespace(manifest=SimpleNamespace(tokenizer=SimpleNamespace(name=tokenizer)))
    chosen, said = traces.shards_profile(shards)
    assert chosen.name == profile
    assert (said is None) if note is None else (said is not None and note in said and "--profile" in said)


def test_replay_run_defaults_to_the_same_profile(
    qwen_shards: Path, sample_shards: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `traces show` prints is what `replay run` sends: one default rule for both."""
    import jobs

    class Captured(Exception):
        pass

    async def run(config: Any, gates: str = "official") -> Any:
        raise Captured(config.profile)

    monkeypatch.setattr(jobs, "scored_run", run)
    for shards, profile in ((qwen_shards, "qwen3.6-35b-a3b"), (sample_shards, "kimi-k3")):
        with pytest.raises(Captured) as caught:
            cli.cli.main(args=["replay", "run", str(shards)], prog_name="trajbench", standalone_mode=False)
        assert caught.value.args == (profile,)
    assert capsys.readouterr().err == ""  # shards without a tokenizer: the run records kimi-k3, no note
