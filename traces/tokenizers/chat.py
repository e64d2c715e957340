"""A tokenizer plus a chat-template renderer = the build's `TokenCounter` (traces.shards.build).

A renderer turns one prompt's messages into the text a server would tokenize, one append at a
time (`RenderSession`); `ChatTokenizer` counts that text with a `Tally`, so the ISL of turn t
costs the tokens of turn t's new messages, not of the whole prompt (linear, not quadratic, in
trajectory length). Renderers that cannot extend (a template that re-renders history) return a
reset edit with the whole text, which stays exact and only costs time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import TraceError
from .counting import Tally, TextCounter

#: Bumped whenever a built-in renderer's output changes; part of every fingerprint.
RENDERER_VERSION = "1"


class TokenizerError(TraceError):
    """A tokenizer that cannot be loaded or a message it cannot render."""


@dataclass(frozen=True)
class Edit:
    """What one append did to the rendered (closed) prompt text."""

    text: str
    reset: bool = False  # True: `text` is the whole new text, not an addition


class RenderSession(Protocol):
    """The rendered text of one growing prompt (no generation prompt, pending closers apart)."""

    def append(self, messages: list[dict[str, Any]]) -> Edit: ...

    def suffix(self) -> str:
        """Text that closes the prompt as it stands (e.g. the end of a tool-response block)."""

    def generation(self) -> str:
        """The generation prompt a server adds after the prompt (`add_generation_prompt`)."""


class Renderer(Protocol):
    template_text: str

    def session(self, tools: list[dict[str, Any]] | None) -> RenderSession: ...

    def answer_text(self, message: dict[str, Any]) -> str:
        """The text of one assistant message as it sits in a prompt (with its framing)."""


def server_message(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as an OpenAI-compatible server hands it to the template (vLLM's rules).

    Missing content becomes "" and tool-call arguments given as a JSON string become a dict,
    which is what templates that iterate `arguments|items` (Qwen3.5/3.6) require.
    """
    out = dict(msg)
    if out.get("content") is None:
        out["content"] = ""
    calls = out.get("tool_calls")
    if calls:
        fixed = []
        for call in calls:
            call = dict(call)
            fn = dict(call.get("function") or {})
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    fn["arguments"] = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError:
                    raise TokenizerError(
                        f"tool call {call.get('id')!r}: arguments are not valid JSON ({args[:60]!r}); "
                        "a server would reject this message"
                    ) from None
            elif args is None:
                fn["arguments"] = {}
            call["function"] = fn
            fixed.append(call)
        out["tool_calls"] = fixed
    return out


def reference_calls_json(calls: list[dict[str, Any]]) -> str:
    """Tool calls as the reference client's token-count fallback writes them when the chat
    template cannot render them: compact JSON (no spaces), non-ASCII kept, each call as its
    stream merge built it (`type`, `function` with `arguments` then a non-empty `name`, a
    non-empty `id` last), arguments left as the string that arrived."""
    merged = []
    for call in calls:
        fn = call.get("function") or {}
        out_fn: dict[str, Any] = {"arguments": fn.get("arguments") or ""}
        if fn.get("name"):
            out_fn["name"] = fn["name"]
        out: dict[str, Any] = {"type": call.get("type") or "function", "function": out_fn}
        if call.get("id"):
            out["id"] = call["id"]
        merged.append(out)
    return json.dumps(merged, ensure_ascii=False, separators=(",", ":"))


class ChatPrompt:
    """`PromptCount` of one prompt: running token count of its rendered text."""

    def __init__(self, counter: TextCounter, session: RenderSession) -> None:
        self._counter = counter
        self._session = session
        self._tally = Tally(counter)

    def _closed(self) -> int:
        return self._tally.with_suffix(self._session.suffix())

    def add(self, messages: list[dict[str, Any]]) -> int:
        before = self._closed()
        edit = self._session.append(messages)
        if edit.reset:
            self._tally = Tally(self._counter)
        self._tally.append(edit.text)
        return self._closed() - before

    def isl(self) -> int:
        return self._tally.with_suffix(self._session.suffix() + self._session.generation())


class ChatTokenizer:
    """A vocabulary and a chat template: token counts of prompts and answers, and `encode`."""

    def __init__(
        self,
        name: str,
        *,
        encode: Callable[[str], list[int]],
        specials: list[str],
        renderer: Renderer,
        vocab_bytes: bytes,
        safe_cuts: bool = True,
        decode: Callable[[list[int]], str] | None = None,
        counter: TextCounter | None = None,
    ) -> None:
        self.name = name
        self.renderer = renderer
        self._encode = encode
        self._decode = decode
        # a counter of its own: one whose counts are not `encode`'s lengths summed over cuts
        # (the simulator's ~4 characters per token, replay.cacheobs)
        self.counter = counter if counter is not None else TextCounter(encode, specials, safe_cuts=safe_cuts)
        h = hashlib.sha256()
        for part in (vocab_bytes, renderer.template_text.encode("utf-8"), RENDERER_VERSION.encode()):
            h.update(hashlib.sha256(part).digest())
        self.fingerprint = h.hexdigest()
        self._empty_answer: int | None = None

    def encode(self, text: str) -> list[int]:
        """Token ids of plain text (special-token strings in it become special tokens)."""
        return self._encode(text)

    def decode(self, ids: list[int]) -> str:
        """The text of token ids, special tokens written out (what a template parity report shows)."""
        if self._decode is None:
            raise TokenizerError(f"tokenizer {self.name} cannot decode token ids")
        return self._decode(list(ids))

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        """The whole text of one request's prompt, generation prompt included: what a server
        tokenizes for `messages` and `tools` with `add_generation_prompt` (`traces check-template`)."""
        session = self.renderer.session(list(tools) if tools else None)
        edit = session.append(list(messages)) if messages else None
        return (edit.text if edit is not None else "") + session.suffix() + session.generation()

    def count_text(self, text: str) -> int:
        return self.counter.count(text)

    def start(self, tools: list[dict[str, Any]] | None) -> ChatPrompt:
        return ChatPrompt(self.counter, self.renderer.session(list(tools) if tools else None))

    def count_messages(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
        """ISL of a whole request: messages + tools, with the generation prompt."""
        prompt = self.start(tools)
        prompt.add(list(messages))
        return prompt.isl()

    def answer_tokens(self, message: dict[str, Any]) -> int:
        """Tokens of an assistant message as the chat template renders it, minus the text of an
        empty answer, so framing tokens never count and "" counts 0."""
        if self._empty_answer is None:
            self._empty_answer = self.counter.count(self.renderer.answer_text({"role": "assistant", "content": ""}))
        return max(0, self.counter.count(self.renderer.answer_text(message)) - self._empty_answer)

    def output_tokens(self, message: dict[str, Any], *, structured: bool | None = None) -> int | None:
        """Output tokens of one answer (`content`, `reasoning_content`, `tool_calls`), counted as
        the reference client counts them (docs/metrics.md): with reasoning or tool calls through
        the chat template (framing subtracted), plain text as its tokens alone; None for an empty
        answer, which the reference leaves out of its output lengths. `structured` forces the
        choice (the part of an answer after its first chunk is counted the way the whole was)."""
        content = message.get("content") or ""
        reasoning = message.get("reasoning_content")
        calls = message.get("tool_calls")
        if not (structured if structured is not None else (reasoning or calls)):
            return self.count_text(content) if content else None
        answer: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            answer["reasoning_content"] = reasoning
        if calls:
            answer["tool_calls"] = list(calls)
        try:
            return self.answer_tokens(answer)
        except TokenizerError:  # e.g. arguments that are not JSON: the reference counts the text
            text = reference_calls_json(calls) if calls else ""
            return self.count_text("\n".join(p for p in (content, reasoning, text) if p))

    def history_render(self, messages: list[dict[str, Any]]) -> str:
        """The text the chat template makes of a short conversation (no tools, no generation
        prompt): what the history-marker check compares with and without the marker."""
        session = self.renderer.session(None)
        return session.append(list(messages)).text + session.suffix()
