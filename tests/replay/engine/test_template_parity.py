"""`traces check-template` against loopback engines (tests/replay/template_server.py) that render
with the client's own tokenizer and template, once unchanged (100 % parity) and once with one
special token slipped in before the generation prompt: the first divergence must be exactly the
prompt's token count without its generation prompt, which the shards' own ISL column gives
independently of the comparison."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from template_server import template_server

import cli
import traces
from replay import ReplayError, check_template, default_template_tokenizer
from replay.engine.template_parity import first_divergence, sample_turns
from replay.engine.tokenize import detect_api
from traces.tokenizers import ChatTokenizer, load_tokenizer

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "traces" / "data" / "sample.jsonl"
GENERATION = "<|im_start|>assistant\n<think>\n"  # the qwen3.6 template's generation prompt
DRIFT = "<|endoftext|>"


@pytest.fixture(scope="module")
def qwen() -> ChatTokenizer:
    return load_tokenizer("qwen3.6")


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory, qwen: ChatTokenizer) -> Path:
    """The sample, its token columns counted with qwen3.6 (so the shards name their tokenizer)."""
    out = tmp_path_factory.mktemp("parity") / "sample"
    traces.build_shards([str(SAMPLE)], out, traces.BuildOptions(name="sample"), counter=qwen)
    return out


def _drift(text: str) -> str:
    assert text.endswith(GENERATION)
    return text[: -len(GENERATION)] + DRIFT + GENERATION


def _isl(shards: Path) -> dict[tuple[str, int], int]:
    s = traces.Shards(shards)
    return {(r.instance_id, r.turn): r.isl_tokens for inst in s for r in inst.turns if r.isl_tokens is not None}


@pytest.fixture(params=["vllm", "llamacpp"])
def flavour(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def test_an_engine_with_the_same_template_is_100_percent(counted: Path, qwen: ChatTokenizer, flavour: str) -> None:
    profile = traces.get_profile("qwen3.6-35b-a3b")
    with template_server(qwen, flavour) as (url, seen):
        report = check_template(str(counted), url, qwen, profile, sample=6, seed=1)
    assert report.api == flavour and len(report.turns) == 6
    assert report.identical == 6 and report.parity == 1.0
    isl = _isl(counted)
    for r in report.turns:
        assert r.identical and r.first_divergence is None and r.client_tokens == r.engine_tokens
        assert r.client_tokens == isl[(r.instance_id, r.turn)]  # the build's incremental count agrees
    if flavour == "vllm":
        tokenize = [b for b in seen if b["path"] == "/tokenize"]
        assert tokenize[0]["model"] == profile.served_model_name and tokenize[0]["add_generation_prompt"] is True
        assert tokenize[0]["chat_template_kwargs"] == profile.chat_template_kwargs


def test_a_drifted_template_is_found_at_the_first_divergent_token(
    counted: Path, qwen: ChatTokenizer, flavour: str, tmp_path: Path
) -> None:
    profile = traces.get_profile("qwen3.6-35b-a3b")
    generation_tokens = len(qwen.encode(GENERATION))
    with template_server(qwen, flavour, _drift) as (url, _):
        report = check_template(str(counted), url, qwen, profile, sample=5, seed=3)
        again = check_template(str(counted), url, qwen, profile, sample=5, seed=3)
    assert again.text() == report.text()  # the same shards, seed and engine: the same bytes
    assert report.identical == 0 and report.parity == 0.0
    isl = _isl(counted)
    for r in report.turns:
        where = isl[(r.instance_id, r.turn)] - generation_tokens  # the prompt without its generation prompt
        assert (r.first_divergence, r.client_tokens, r.engine_tokens) == (
            where,
            where + generation_tokens,
            r.client_tokens + 1,
        )
        assert r.engine_after is not None and r.engine_after.startswith(DRIFT + "<|im_start|>assistant")
        assert r.client_after == GENERATION
        assert r.text_before is not None and r.text_before.endswith("<|im_end|>\n")
    # the JSON report holds the same, and the same seed picks the same turns
    out = report.write_to(tmp_path / "parity.json")
    data = json.loads(out.read_text())
    assert data["parity"] == 0.0 and [t["first_divergence"] for t in data["turns"]] == [
        r.first_divergence for r in report.turns
    ]
    assert sample_turns(traces.Shards(counted), 5, 3) == sample_turns(traces.Shards(counted), 5, 3)


@pytest.mark.slow
def test_the_command_prints_each_turn_and_exits_1_only_when_strict(
    counted: Path, qwen: ChatTokenizer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with template_server(qwen, "llamacpp", _drift) as (url, _):
        args = ["traces", "check-template", str(counted), "--endpoint", url + "/v1", "--sample", "2"]
        cli.main([*args, "--json", str(tmp_path / "p.json")])  # no --strict: exit 0
        out = capsys.readouterr().out
        assert "parity: 0 of 2 sampled turns identical (0.0 %)" in out
        assert "    engine: <|endoftext|><|im_start|>assistant" in out and "(llamacpp, model" in out
        assert (tmp_path / "p.json").is_file()
        with pytest.raises(SystemExit) as ended:
            cli.main([*args, "--strict"])
    assert ended.value.code == 1
    assert "Error: (--strict) template parity 0.0 % < 100 %" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flavour", "api"), [("vllm", "vllm"), ("vllm-dev", "vllm"), ("sglang", "sglang"), ("llamacpp", "llamacpp")]
)
def test_auto_detection_tells_vllm_in_dev_mode_from_sglang(qwen: ChatTokenizer, flavour: str, api: str) -> None:
    """vLLM with VLLM_SERVER_DEV_MODE=1 also answers /server_info: only SGLang's own keys make SGLang."""
    with template_server(qwen, flavour) as (url, _), httpx.Client(timeout=10) as client:
        assert detect_api(client, url) == api
        assert detect_api(client, url + "/v1/") == api


def test_an_sglang_engine_is_checked_over_its_tokenize_route(counted: Path, qwen: ChatTokenizer) -> None:
    with template_server(qwen, "sglang") as (url, seen):
        report = check_template(str(counted), url, qwen, traces.get_profile("qwen3.6-35b-a3b"), sample=3)
    assert report.api == "sglang" and report.parity == 1.0
    assert {b["path"] for b in seen} == {"/tokenize"}


def test_an_endpoint_without_the_apis_is_told_so(counted: Path, qwen: ChatTokenizer) -> None:
    profile = traces.get_profile("qwen3.6-35b-a3b")
    with template_server(qwen, "bare") as (url, _):
        with pytest.raises(ReplayError, match="cannot tell which engine this is"):
            check_template(str(counted), url, qwen, profile, sample=1)
        with pytest.raises(
            ReplayError, match=r"answered HTTP 404: Not Found: the endpoint does not serve POST /tokenize with chat"
        ):
            check_template(str(counted), url, qwen, profile, sample=1, api="sglang")
        with pytest.raises(
            ReplayError, match=r"answered HTTP 404: Not Found: the endpoint does not serve POST /apply-template"
        ):
            check_template(str(counted), url, qwen, profile, sample=1, api="llamacpp")
    with pytest.raises(ReplayError, match="cannot connect"):
        check_template(str(counted), url, qwen, profile, sample=1)


def test_vllm_gets_the_reasoning_under_the_name_its_tokenize_reads(counted: Path, qwen: ChatTokenizer) -> None:
    """vLLM's /tokenize drops `reasoning_content` (its chat endpoint renames it to `reasoning`, its
    tokenize endpoint does not): sent as such, every prompt with earlier reasoning would be counted
    without it. Sent as `reasoning`, the engine renders what its chat endpoint renders."""
    profile = traces.get_profile("qwen3.6-35b-a3b")
    with template_server(qwen, "vllm") as (url, seen):
        report = check_template(str(counted), url, qwen, profile, sample=40)
    assistant = [m for b in seen if b["path"] == "/tokenize" for m in b["messages"] if m["role"] == "assistant"]
    assert any("reasoning" in m for m in assistant) and not any("reasoning_content" in m for m in assistant)
    assert report.parity == 1.0, [(t.instance_id, t.turn, t.first_divergence) for t in report.turns if not t.identical]
    with template_server(qwen, "sglang") as (url, seen):  # SGLang's is sent as the shards hold it
        check_template(str(counted), url, qwen, profile, sample=40)
    assert any("reasoning_content" in m for b in seen for m in b["messages"] if m["role"] == "assistant")


@pytest.mark.slow
def test_the_served_model_name_is_found_not_guessed(
    counted: Path, qwen: ChatTokenizer, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM answers 404 to any model name it does not serve: without --model, the endpoint's only
    model is used and the report says so; with several, none is guessed; an engine error quotes
    the engine."""
    profile = traces.get_profile("qwen3.6-35b-a3b")
    with template_server(qwen, "vllm", served=("SmolLM2-135M-Instruct",)) as (url, seen):
        report = check_template(str(counted), url, qwen, profile, sample=2)
        assert (report.model, report.model_source, report.parity) == ("SmolLM2-135M-Instruct", "served", 1.0)
        assert {b["model"] for b in seen if b["path"] == "/tokenize"} == {"SmolLM2-135M-Instruct"}
        cli.main(["traces", "check-template", str(counted), "--endpoint", url, "--sample", "1"])
        assert (
            "model SmolLM2-135M-Instruct: the endpoint's only model (the profile's 'Qwen/Qwen3.6-35B-A3B' is not served)"
            in capsys.readouterr().out
        )
        with pytest.raises(ReplayError) as refused:
            check_template(str(counted), url, qwen, profile, sample=1, model="nope")
    assert str(refused.value) == (
        f"POST {url}/tokenize (model 'nope') answered HTTP 404: The model `nope` does not exist. "
        "Valid aliases: SmolLM2-135M-Instruct."
    )
    with template_server(qwen, "vllm", served=("a", "b")) as (url, seen):
        with pytest.raises(ReplayError) as several:
            check_template(str(counted), url, qwen, profile, sample=1)
    assert str(several.value) == (
        f"{url} does not serve the profile's model name 'Qwen/Qwen3.6-35B-A3B'; it serves 2 models (a, b): "
        "pass --model NAME with the one to measure"
    )
    assert not [b for b in seen if b["path"] == "/tokenize"]


def test_shards_without_a_pathless_tokenizer_ask_for_one(sample_shards: Path) -> None:
    with pytest.raises(ReplayError, match=r"pass --tokenizer NAME:PATH \(e.g. hf:DIR"):
        default_template_tokenizer(traces.Shards(sample_shards), traces.get_profile("kimi-k3"))


def test_first_divergence() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    assert first_divergence([], [7]) == 0


# ---------------------------------------------------------------- the history marker, as the engine sees it
def test_the_engine_keeps_every_sampled_history_marker(counted: Path, qwen: ChatTokenizer) -> None:
    """Each sampled turn that carries a marker is tokenised once more without it: with the same
    template the engine's tokens differ every time."""
    profile = traces.get_profile("qwen3.6-35b-a3b")
    with template_server(qwen, "vllm") as (url, seen):
        report = check_template(str(counted), url, qwen, profile, sample=8, seed=2)
    marked = [r for r in report.turns if r.marker_kept is not None]
    assert marked and report.markers_checked == len(marked) and report.markers_erased == 0
    assert all(r.marker_kept for r in marked)
    # turn 1 has no replayed assistant message: nothing to check there
    assert all(r.marker_kept is None for r in report.turns if r.turn == 1)
    assert sum(b["path"] == "/tokenize" for b in seen) == len(report.turns) + len(marked)
    assert "history marker: the engine's tokens change with it in" in "\n".join(
        __import__("replay").render_parity(report)
    )


def _collapse_spaces(text: str) -> str:
    """An engine that rewrites messages before templating so that runs of spaces become one (as
    vLLM and SGLang do to tool-call arguments, which they parse into objects)."""
    import re

    return re.sub(r" {2,}", " ", text)


@pytest.mark.slow
def test_an_engine_that_erases_the_marker_is_found_and_fails_strict(
    counted: Path, qwen: ChatTokenizer, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = traces.get_profile("qwen3.6-35b-a3b")
    with template_server(qwen, "vllm", _collapse_spaces) as (url, _):
        report = check_template(str(counted), url, qwen, profile, sample=8, seed=2)
        assert report.markers_checked > 0 and report.markers_erased == report.markers_checked
        args = ["traces", "check-template", str(counted), "--endpoint", url, "--sample", "8", "--seed", "2"]
        with pytest.raises(SystemExit) as ended:
            cli.main([*args, "--strict"])
    assert ended.value.code == 1
    captured = capsys.readouterr()
    assert "ERASED" in captured.out
    n = report.markers_checked
    assert f"; and the engine erases the history marker in {n} of {n} sampled replayed" in captured.err
