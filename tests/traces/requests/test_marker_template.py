"""The history marker survives the chat template: a build with a tokenizer checks every replayed
assistant message against the template and refuses one that erases the marker too often."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import traces
from traces.requests.marker import MARK
from traces.tokenizers import load_tokenizer

SAMPLE = Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl"


@pytest.fixture(scope="module")
def qwen() -> Any:
    return load_tokenizer("qwen3.6", template_kwargs={"preserve_thinking": True})


def test_qwen_template_keeps_the_marker_and_would_erase_a_leading_space(qwen: Any, tmp_path: Path) -> None:
    built = traces.Shards(traces.build_shards([str(SAMPLE)], tmp_path / "s", traces.BuildOptions(), counter=qwen).out)
    summary = built.manifest.history_marker
    assert summary is not None
    assert summary.checked_with_template == "qwen3.6" and summary.unmarked == []
    checked = 0
    for inst in built:
        marked = list(traces.iter_prompts(inst))
        plain = list(traces.iter_prompts(inst, markers=False))
        for m, p in zip(marked[1:], plain[1:], strict=True):
            a = next(i for i, msg in enumerate(p.messages) if msg["role"] == "assistant" and msg != m.messages[i])
            assert qwen.history_render(m.messages[: a + 1]) != qwen.history_render(p.messages[: a + 1])
            # the old rule, a leading space, renders exactly as the unmarked message: Qwen3.6 trims it
            old = {**p.messages[a]}
            field = "reasoning_content" if old.get("reasoning_content") else "content"
            old[field] = MARK + old[field]
            assert qwen.history_render([*p.messages[:a], old]) == qwen.history_render(p.messages[: a + 1])
            checked += 1
    assert checked == summary.assistant_messages == 13


class _Words:
    """A stand-in tokenizer whose template renders each message's words joined by one space, so
    no whitespace marker survives, or (`keep_content`) which drops reasoning but keeps content
    and tool-call arguments as they are, or (`keep_all`) which keeps reasoning too."""

    name = "words"
    fingerprint = "words-1"

    def __init__(self, *, keep_content: bool = False, keep_all: bool = False) -> None:
        self.keep_content = keep_content or keep_all
        self.keep_all = keep_all

    def start(self, tools: Any) -> Any:
        class Count:
            def add(self, messages: list[dict[str, Any]]) -> int:
                return 0

            def isl(self) -> int:
                return 0

        return Count()

    def output_tokens(self, message: dict[str, Any], **_: Any) -> int:
        return len((message.get("content") or "").split())

    def history_render(self, messages: list[dict[str, Any]]) -> str:
        if self.keep_content:
            calls = lambda m: "".join(c["function"]["arguments"] for c in m.get("tool_calls") or ())  # noqa: E731
            think = lambda m: (m.get("reasoning_content") or "") if self.keep_all else ""  # noqa: E731
            return "|".join(f"{m['role']}:{think(m)}{m.get('content') or ''}{calls(m)}" for m in messages)
        return "|".join(f"{m['role']}:" + " ".join(str(m.get("content") or "").split()) for m in messages)


def test_a_template_that_erases_the_marker_fails_the_build(tmp_path: Path) -> None:
    with pytest.raises(traces.TraceError) as err:
        traces.build_shards([str(SAMPLE)], tmp_path / "s", traces.BuildOptions(), counter=_Words())
    text = str(err.value)
    assert re.search(r"erases the history marker in 13 of 13 replayed assistant messages \(100\.0 %", text)
    assert "--no-history-marker" in text and "docs/history-marker.md" in text
    assert not (tmp_path / "s").exists()
    # without the marker the same tokenizer builds
    traces.build_shards([str(SAMPLE)], tmp_path / "s", traces.BuildOptions(history_marker=False), counter=_Words())


def test_the_first_position_the_template_keeps_is_taken(tmp_path: Path) -> None:
    built = traces.build_shards([str(SAMPLE)], tmp_path / "s", traces.BuildOptions(), counter=_Words(keep_all=True))
    assert built.manifest.history_marker is not None
    positions = built.manifest.history_marker.positions
    assert positions == {"reasoning_content": 11, "content": 2}
    # a template that drops reasoning keeps no position of the 11 messages that hold only
    # reasoning and tool calls: tool-call arguments are never tried (engines parse them into
    # objects, erasing the space), so the build refuses rather than mark where nothing changes
    with pytest.raises(traces.TraceError, match=r"erases the history marker in 11 of 13 replayed"):
        traces.build_shards([str(SAMPLE)], tmp_path / "t", traces.BuildOptions(), counter=_Words(keep_content=True))
    assert not (tmp_path / "t").exists()
