"""Built-in chat renderers written in Python: Qwen3.6 (exact) and plain ChatML (for raw vocabularies).

`Qwen36Renderer` reproduces the Qwen3.5/3.6 `chat_template.jinja` for text-only messages, as a
server renders it for the `qwen3.6-35b-a3b` profile:

- tools: one system block "# Tools … <tools>" with each tool as JSON (`tojson`: ", "/": "
  separators, keys in wire order) and the XML tool-call instructions, then the system prompt.
- user: `<|im_start|>user\\n{content|trim}<|im_end|>\\n`.
- assistant: `<|im_start|>assistant\\n<think>\\n{reasoning|trim}\\n</think>\\n\\n{content|trim}`,
  then each tool call as `<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n…`
  and `<|im_end|>\\n`. The profile sends `chat_template_kwargs.preserve_thinking: true`, under
  which the template keeps the <think> block of *every* earlier assistant turn; without it the
  template would drop reasoning before the last user query and the prompt would stop being an
  extension of the previous one. So history renders are append-only and counts are incremental.
- tool results: consecutive tool messages share one `<|im_start|>user` block of
  `\\n<tool_response>\\n{content|trim}\\n</tool_response>` items, closed by `<|im_end|>\\n` when a
  non-tool message follows or the prompt ends (the pending closer is the session's `suffix`).
- generation prompt: `<|im_start|>assistant\\n<think>\\n` (thinking on, the model's default).

Messages go through `server_message` first (missing content → "", argument strings → dicts),
which is what vLLM does before applying the template.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import content_text
from .chat import Edit, TokenizerError, server_message

_TOOLS_HEAD = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
_TOOLS_RULES = (
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\n"
    "Reminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> "
    "block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be "
    "specified\n- You may provide optional reasoning for your function call in natural language "
    "BEFORE the function call, but NOT after\n- If there is no function call available, answer the "
    "question like normal with your current knowledge and do not tell the user about function calls\n"
    "</IMPORTANT>"
)


def _tojson(value: Any) -> str:
    # transformers' `tojson` filter: json.dumps defaults, no ASCII escaping, keys unsorted.
    return json.dumps(value, ensure_ascii=False)


def _text(content: Any, where: str) -> str:
    try:
        return content_text(content)
    except ValueError as exc:
        raise TokenizerError(f"{where}: {exc}") from None


class Qwen36Renderer:
    """The Qwen3.6 chat template with preserve_thinking=true, as append-only text pieces."""

    template_text = __doc__ or ""

    def __init__(self, *, enable_thinking: bool = True) -> None:
        self.enable_thinking = enable_thinking
        if not enable_thinking:
            self.template_text = self.template_text + "\nenable_thinking=false"

    def session(self, tools: list[dict[str, Any]] | None) -> _QwenSession:
        return _QwenSession(self, tools)

    def header(self, system: str | None, tools: list[dict[str, Any]] | None) -> str:
        if tools:
            text = (
                "<|im_start|>system\n"
                + _TOOLS_HEAD
                + "".join("\n" + _tojson(t) for t in tools)
                + "\n</tools>"
                + _TOOLS_RULES
            )
            if system is not None and system.strip():
                text += "\n\n" + system.strip()
            return text + "<|im_end|>\n"
        if system is not None:
            return "<|im_start|>system\n" + system.strip() + "<|im_end|>\n"
        return ""

    def assistant(self, msg: dict[str, Any]) -> str:
        m = server_message(msg)
        content = _text(m.get("content"), "assistant message").strip()
        reasoning = m.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = ""
            if "</think>" in content:
                reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
                content = content.split("</think>")[-1].lstrip("\n")
        out = "<|im_start|>assistant\n<think>\n" + reasoning.strip() + "\n</think>\n\n" + content
        for k, call in enumerate(m.get("tool_calls") or ()):
            fn = call.get("function", call)
            name = fn.get("name", "")
            if k == 0:
                out += ("\n\n" if content.strip() else "") + "<tool_call>\n<function=" + name + ">\n"
            else:
                out += "\n<tool_call>\n<function=" + name + ">\n"
            args = fn.get("arguments") or {}
            if not isinstance(args, dict):
                raise TokenizerError(
                    f"tool call {call.get('id')!r}: arguments must be a JSON object for the Qwen3.6 template"
                )
            for key, value in args.items():
                shown = value if isinstance(value, str) else _tojson(value)
                out += "<parameter=" + str(key) + ">\n" + shown + "\n</parameter>\n"
            out += "</function>\n</tool_call>"
        return out + "<|im_end|>\n"

    def answer_text(self, message: dict[str, Any]) -> str:
        return self.assistant(message)

    def generation(self) -> str:
        if not self.enable_thinking:
            return "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        return "<|im_start|>assistant\n<think>\n"

    tool_open = "<|im_start|>user"
    close = "<|im_end|>\n"

    def user(self, msg: dict[str, Any]) -> str:
        return "<|im_start|>user\n" + _text(msg.get("content"), "user message").strip() + "<|im_end|>\n"

    def tool(self, msg: dict[str, Any]) -> str:
        return "\n<tool_response>\n" + _text(msg.get("content"), "tool message").strip() + "\n</tool_response>"


class ChatMLRenderer(Qwen36Renderer):
    """Plain ChatML framing with JSON tools and tool calls, for vocabularies without a template
    (`tiktoken:FILE`): the counts are the vocabulary's, the framing is an approximation."""

    template_text = "chatml-json v1: <|im_start|>role\\ncontent<|im_end|>\\n; tools and calls as JSON"

    def header(self, system: str | None, tools: list[dict[str, Any]] | None) -> str:
        text = system.strip() if system else ""
        if tools:
            text += ("\n\n" if text else "") + "# Tools\n" + "\n".join(_tojson(t) for t in tools)
        return "<|im_start|>system\n" + text + "<|im_end|>\n" if text or system is not None else ""

    def assistant(self, msg: dict[str, Any]) -> str:
        m = server_message(msg)
        out = "<|im_start|>assistant\n"
        reasoning = m.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning.strip():
            out += "<think>\n" + reasoning.strip() + "\n</think>\n\n"
        out += _text(m.get("content"), "assistant message").strip()
        for call in m.get("tool_calls") or ():
            fn = call.get("function", call)
            out += (
                "\n<tool_call>\n"
                + _tojson({"name": fn.get("name", ""), "arguments": fn.get("arguments") or {}})
                + "\n</tool_call>"
            )
        return out + "<|im_end|>\n"

    def generation(self) -> str:
        return "<|im_start|>assistant\n"


class _QwenSession:
    """Append-only rendering of one prompt with a Qwen-style renderer."""

    def __init__(self, renderer: Qwen36Renderer, tools: list[dict[str, Any]] | None) -> None:
        self.r = renderer
        self.tools = tools
        self.started = False
        self.in_tools = False  # the last message was a tool result: its block's closer is pending

    def append(self, messages: list[dict[str, Any]]) -> Edit:
        parts: list[str] = []
        for msg in messages:
            role = msg.get("role")
            if not self.started:
                self.started = True
                if role == "system":
                    parts.append(self.r.header(_text(msg.get("content"), "system message"), self.tools))
                    continue
                parts.append(self.r.header(None, self.tools))
            if role == "tool":
                if not self.in_tools:
                    parts.append(self.r.tool_open)
                parts.append(self.r.tool(msg))
                self.in_tools = True
                continue
            if self.in_tools:
                parts.append(self.r.close)
                self.in_tools = False
            if role == "user":
                parts.append(self.r.user(msg))
            elif role == "assistant":
                parts.append(self.r.assistant(msg))
            elif role == "system":
                raise TokenizerError("a system message must be the first message of a prompt (Qwen3.6 template rule)")
            else:
                raise TokenizerError(f"unknown message role {role!r}; expected system, user, assistant or tool")
        return Edit("".join(parts))

    def suffix(self) -> str:
        return self.r.close if self.in_tools else ""

    def generation(self) -> str:
        if not self.started:
            return self.r.header(None, self.tools) + self.r.generation()
        return self.r.generation()
