"""`--tokenizer hf:ORG/NAME`: a model's tokenizer found offline in the local Hugging Face cache
(never downloaded), with a clear error when it is not there, and no "PyTorch was not found"
notice on loading while transformers' other warnings still show.

The model folder is made here: a small byte-level BPE tokenizer.json trained on a few words and
a ChatML template, laid out in a Hub cache as huggingface_hub lays it out."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from traces import BuildOptions, build_shards
from traces.tokenizers import TokenizerError, load_tokenizer

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "traces" / "data" / "sample.jsonl"
COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _model_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([SAMPLE.read_text("utf-8")], trainer)
    tok.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "chat_template": CHATML}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hub cache holding the model acme/tiny-chat at refs/main."""
    cache = tmp_path_factory.mktemp("hub")
    repo = cache / "models--acme--tiny-chat"
    _model_folder(repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT + "\n")
    return cache


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_hub_id_loads_from_the_local_cache(hub: Path, monkeypatch: pytest.MonkeyPatch, offline: None) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    tok = load_tokenizer("hf:acme/tiny-chat")
    local = load_tokenizer(f"hf:{hub / 'models--acme--tiny-chat' / 'snapshots' / COMMIT}")
    assert tok.name == "hf:acme/tiny-chat"
    assert tok.fingerprint == local.fingerprint
    messages = [{"role": "user", "content": "Fix the issue in /testbed"}]
    assert tok.count_messages(messages, None) == local.count_messages(messages, None) > 5
    assert load_tokenizer(f"hf:acme/tiny-chat@{COMMIT}").fingerprint == tok.fingerprint


def test_build_records_the_hub_id_as_the_tokenizer(
    hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: None
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    tok = load_tokenizer("hf:acme/tiny-chat")
    # the tiny template renders no tool calls, so the history marker check is left out
    built = build_shards([str(SAMPLE)], tmp_path / "s", BuildOptions(history_marker=False), counter=tok)
    assert built.manifest.tokenizer is not None and built.manifest.tokenizer.name == "hf:acme/tiny-chat"


def test_hub_id_not_in_the_cache_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: None
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(TokenizerError) as exc:
        load_tokenizer("hf:Qwen/Qwen3-8B")
    message = str(exc.value)
    assert message.startswith(
        f"hf:Qwen/Qwen3-8B: the model is not in the local Hugging Face cache (no {tmp_path}/models--Qwen--Qwen3-8B); "
        "nothing is downloaded here. On a machine with internet run `hf download Qwen/Qwen3-8B --include"
    )
    assert "\n" not in message


def test_a_missing_folder_that_is_no_hub_id(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="nofolder: not a folder; pass a local Hugging Face model folder"):
        load_tokenizer(f"hf:{tmp_path}/nofolder")


def test_loading_prints_no_pytorch_notice_but_other_warnings_still_show(hub: Path) -> None:
    code = (
        "import logging, sys\n"
        "from traces.tokenizers import load_tokenizer\n"
        "tok = load_tokenizer('hf:acme/tiny-chat')\n"
        "print(tok.count_messages([{'role': 'user', 'content': 'hi'}], None))\n"
        "logging.getLogger('transformers').warning('a warning of its own')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_CACHE": str(hub)}
    env.pop("TRANSFORMERS_NO_ADVISORY_WARNINGS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "PyTorch" not in done.stderr and "None of PyTorch" not in done.stderr
    assert "a warning of its own" in done.stderr
