"""Prompt rendering and token accounting of the simulator: counts, cache-block hashes, answer pieces.

Rendering is a simple deterministic chat format (the system message, the tools JSON, then one
block per message with a role header, reasoning inside <think>, tool calls as canonical JSON, then the generation header),
chosen so that a longer shared message prefix is a longer shared text prefix, and so that the
server's rendering of an answer equals the rendering of the same assistant message in the next
turn's history. docs/history-marker.md's history marker (a leading space) therefore breaks the match right after
the assistant header, exactly as it does on a real server.

The default tokenizer is an approximation: one token per 4 characters of the rendered text
(`ceil(chars / 4)`; real BPE vocabularies average 3.5–4.5 characters per token on English and
code). Token i is the 4-character piece text[4i:4i+4], so a cache block of B tokens is the text
slice of 4·B characters, and hashing that slice is the same as hashing the B token ids, only
faster. Block hashes are chained (each covers its whole prefix) and use Python's built-in `hash`,
which is fast and salted per process: blocks never leave the simulator process, so only equality
matters. The whole-text digest that seeds answers and faults is BLAKE2b, stable everywhere. A registry tokenizer (`--tokenizer SPEC`, `traces.tokenizers.load_tokenizer`)
replaces the approximation for prompt counts and blocks; it is exact but slower, and it renders
prompts with that tokenizer's chat template, as a real engine does, so the simulator's prompt
tokens and cached tokens count what a client with the same tokenizer counts (docs/cache.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from traces import TraceError, canonical_json, content_text

from .config import SimConfigError

ASSISTANT_HEADER = "<|assistant|>\n"
END = "<|end|>\n"
CHARS_PER_TOKEN = 4
_DIGEST = 16


def _text(content: Any) -> str:
    """Message content as text; what the simulator cannot read as text it counts as its JSON."""
    try:
        return content_text(content)
    except ValueError:
        return canonical_json(content)


def render_answer(content: str | None, reasoning: str | None, tool_calls: Sequence[dict[str, Any]] | None) -> str:
    """The text of an assistant message after its header (how the server caches its own answer)."""
    out = []
    if reasoning:
        out.append("<think>" + reasoning + "</think>")
    if content:
        out.append(content)
    for call in tool_calls or ():
        out.append("<tool_call>" + canonical_json(call) + "</tool_call>")
    out.append(END)
    return "".join(out)


def render_message(m: dict[str, Any]) -> str:
    role = m.get("role", "user")
    if role == "assistant":
        return ASSISTANT_HEADER + render_answer(
            _text(m.get("content")), m.get("reasoning_content"), m.get("tool_calls")
        )
    if role == "tool":
        return f"<|tool|>{m.get('tool_call_id', '')}\n{_text(m.get('content'))}{END}"
    return f"<|{role}|>\n{_text(m.get('content'))}{END}"


def render_prompt(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> str:
    """The prompt text the simulator tokenizes, ending with the generation header."""
    rest = list(messages)
    parts = [render_message(rest.pop(0))] if rest and rest[0].get("role") == "system" else []
    # Tools after the (salted) system message, as traces.analysis_reuse orders segments: the
    # salt then isolates the tool list too, which docs/salting.md intends.
    if tools:
        parts.append("<|tools|>" + canonical_json(list(tools)) + END)
    parts.extend(render_message(m) for m in rest)
    parts.append(ASSISTANT_HEADER)
    return "".join(parts)


class Encoder(Protocol):
    def encode(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class Rendered:
    """A prompt's text (what is tokenized) and the text its answer continues when the server
    caches prompt + answer (the prompt without its generation header, for a chat template)."""

    text: str
    before_answer: str


@dataclass(frozen=True)
class Tokens:
    """A tokenized text: its token count and the chained hashes of its full cache blocks."""

    count: int
    blocks: tuple[int, ...]
    digest: bytes  # BLAKE2b of the whole text: the "request content" that seeds answers and faults


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=_DIGEST).digest()


class ApproxTokenizer:
    """~4 characters per token; see the module docstring for why and how blocks are hashed."""

    name = "approx-4chars"

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size

    def render(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> Rendered:
        text = render_prompt(messages, tools)
        return Rendered(text, text)

    def with_answer(
        self, r: Rendered, content: str | None, reasoning: str | None, tool_calls: Sequence[dict[str, Any]] | None
    ) -> str:
        return r.before_answer + render_answer(content, reasoning, tool_calls)

    def count(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN)

    def tokenize(self, text: str, prefix: Tokens | None = None) -> Tokens:
        """Tokens of `text`; `prefix` (the tokens of a prefix of `text`) saves rehashing it."""
        step = self.block_size * CHARS_PER_TOKEN
        n_full = len(text) // step
        blocks = list(prefix.blocks[:n_full]) if prefix else []
        prev = blocks[-1] if blocks else 0
        for start in range(len(blocks) * step, n_full * step, step):
            prev = hash((prev, text[start : start + step]))
            blocks.append(prev)
        return Tokens(self.count(text), tuple(blocks), _digest(text))

    def pieces(self, text: str) -> list[str]:
        """The text as one piece per token (what one decode step streams)."""
        return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]


class RegistryTokenizer:
    """A real vocabulary from the tokenizer registry: exact counts, blocks over real token ids."""

    def __init__(self, encoder: Encoder, spec: str, block_size: int) -> None:
        self.encoder = encoder
        self.name = spec
        self.block_size = block_size

    def render(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> Rendered:
        """The chat template's text of the request (with its generation prompt), when the
        tokenizer has a template; else the simulator's own format."""
        renderer = getattr(self.encoder, "renderer", None)
        if renderer is None:
            text = render_prompt(messages, tools)
            return Rendered(text, text)
        session = renderer.session(list(tools) if tools else None)
        closed = session.append(list(messages)).text + session.suffix()
        return Rendered(closed + session.generation(), closed)

    def with_answer(
        self, r: Rendered, content: str | None, reasoning: str | None, tool_calls: Sequence[dict[str, Any]] | None
    ) -> str:
        renderer = getattr(self.encoder, "renderer", None)
        if renderer is None:
            return r.before_answer + render_answer(content, reasoning, tool_calls)
        message: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if reasoning:
            message["reasoning_content"] = reasoning
        if tool_calls:
            message["tool_calls"] = list(tool_calls)
        try:
            return r.before_answer + str(renderer.answer_text(message))
        except TraceError:  # an answer the template cannot render: cache the prompt alone
            return r.text

    def count(self, text: str) -> int:
        return len(self.encoder.encode(text))

    def tokenize(self, text: str, prefix: Tokens | None = None) -> Tokens:
        ids = self.encoder.encode(text)
        b = self.block_size
        blocks: list[int] = []
        prev = 0
        for start in range(0, len(ids) - len(ids) % b, b):
            prev = hash((prev, tuple(ids[start : start + b])))
            blocks.append(prev)
        return Tokens(len(ids), tuple(blocks), _digest(text))

    def pieces(self, text: str) -> list[str]:
        """Split the text evenly into as many pieces as it has tokens (streaming granularity only)."""
        n = self.count(text)
        if n <= 1:
            return [text] if text else []
        cuts = [round(i * len(text) / n) for i in range(n + 1)]
        return [text[cuts[i] : cuts[i + 1]] for i in range(n) if cuts[i + 1] > cuts[i]]


SimTokenizer = ApproxTokenizer | RegistryTokenizer


def make_tokenizer(spec: str | None, block_size: int) -> SimTokenizer:
    """The approximation, or `traces.tokenizers.load_tokenizer(spec)` when a spec is given."""
    if spec is None:
        return ApproxTokenizer(block_size)
    try:
        from traces.tokenizers import load_tokenizer
    except ImportError:
        raise SimConfigError(
            f"--tokenizer {spec}: this trajbench has no tokenizer registry (traces.tokenizers); "
            "omit --tokenizer to use the ~4-characters-per-token approximation"
        ) from None
    try:
        encoder = load_tokenizer(spec)
    except TraceError as exc:
        raise SimConfigError(f"--tokenizer {spec}: {exc}") from None
    return RegistryTokenizer(encoder, spec, block_size)
