"""Rendering with a model's own Jinja chat template (Hugging Face and Kimi folders).

A template renders a whole conversation, so the new text of an append is found by rendering a
small window — the head of the prompt (system and first user message) plus the last two messages —
with and without the new messages and taking the difference. That is exact for templates whose
rendering of a message depends only on its neighbours and on whether it comes after the last
user query (Qwen, Kimi, Llama-style templates). When the window's render is not a prefix of the
extended one, or the append contains a user message (Qwen3-style templates then drop earlier
reasoning), the whole prompt is re-rendered and recounted: exact, just slower for that turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .chat import Edit, TokenizerError, server_message
from .quiet import quiet_backend_notice

RenderFn = Callable[[list[dict[str, Any]], "list[dict[str, Any]] | None", bool], str]


def jinja_render(template: str, specials: dict[str, str], kwargs: dict[str, Any]) -> RenderFn:
    """A render function over transformers' own sandboxed Jinja environment and filters."""
    quiet_backend_notice()
    from transformers.utils.chat_template_utils import render_jinja_template

    # the template's variables besides the conversation, merged as transformers' apply_chat_template
    # merges them: the special tokens, then the profile's chat_template_kwargs
    variables: dict[str, Any] = {**specials, **kwargs}

    def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
        try:
            # annotated `-> str`, but it returns (one render per conversation, generation indices)
            out: object = render_jinja_template(
                conversations=[messages],
                tools=tools,  # type: ignore[arg-type]  # annotated as an invariant list, only read
                chat_template=template,
                add_generation_prompt=gen,
                **variables,
            )
        except Exception as exc:  # a template's raise_exception or a Jinja error
            raise TokenizerError(f"the chat template failed to render this conversation: {exc}") from exc
        rendered = out[0] if isinstance(out, tuple) else out
        text = rendered[0] if isinstance(rendered, list) else rendered
        if not isinstance(text, str):
            raise TokenizerError(f"the chat template rendered {type(text).__name__}, not text")
        return text

    return render


class TemplateRenderer:
    def __init__(self, render: RenderFn, template_text: str) -> None:
        self.render = render
        self.template_text = template_text

    def session(self, tools: list[dict[str, Any]] | None) -> _TemplateSession:
        return _TemplateSession(self.render, tools)

    def answer_text(self, message: dict[str, Any]) -> str:
        user = [{"role": "user", "content": "x"}]
        base = self.render(user, None, False)
        full = self.render([*user, server_message(message)], None, False)
        if not full.startswith(base):
            raise TokenizerError(
                "the chat template renders an answer by changing the earlier text; cannot isolate answer tokens"
            )
        return full[len(base) :]


class _TemplateSession:
    def __init__(self, render: RenderFn, tools: list[dict[str, Any]] | None) -> None:
        self.render = render
        self.tools = tools
        self.messages: list[dict[str, Any]] = []
        self.head = 0  # messages[:head] = system + first user message: the window's anchor
        self._gen: str | None = None

    def _full(self) -> Edit:
        text = self.render(self.messages, self.tools, False)
        if self._gen is None:
            with_gen = self.render(self.messages, self.tools, True)
            if not with_gen.startswith(text):
                raise TokenizerError("the chat template's generation prompt rewrites the conversation; cannot count it")
            self._gen = with_gen[len(text) :]
        return Edit(text, reset=True)

    def append(self, messages: list[dict[str, Any]]) -> Edit:
        new = [server_message(m) for m in messages]
        old = self.messages
        self.messages = old + new
        if not self.head:
            for i, m in enumerate(self.messages):
                if m.get("role") == "user":
                    self.head = i + 1
                    break
        if not old or not self.head or len(old) < self.head + 2 or any(m.get("role") == "user" for m in new):
            return self._full()
        window = self.messages[: self.head] + old[-2:]
        before = self.render(window, self.tools, False)
        after = self.render(window + new, self.tools, False)
        if not after.startswith(before):
            return self._full()
        return Edit(after[len(before) :])

    def suffix(self) -> str:
        return ""

    def generation(self) -> str:
        if self._gen is None:
            if not self.messages:
                return self.render([], self.tools, True)
            self._full()
        assert self._gen is not None
        return self._gen
