"""The simulator's own units, for `analyze cache` of a run against trajbench's simulator.

Without `--tokenizer` the simulator renders a prompt in its own plain chat format and counts one
token per 4 characters of it (replay.sim's tokens module); its prompt and cached counts are in
those units, not the run tokenizer's. Compared with the run tokenizer's counts they mislead: a
turn can show more cached tokens than it could reuse (a hit ratio above 100 %), and every turn's
count differs from the client's, which the count rule reads as template drift, so nearly all of
the deficit was blamed on drift that is not there.

So such a run is analysed in the simulator's units: prompts rendered as the simulator renders
them and counted as it counts them. Its prompt counts then equal the analysis's, the cached
counts compare with the ideal, and each deficit goes to its real cause (the salt's cold start,
block granularity, eviction in its LRU cache). The figures describe the simulator, not an engine.
"""

from __future__ import annotations

from typing import Any

from traces.tokenizers import ChatTokenizer, Edit, TextCounter

from ..sim import ASSISTANT_HEADER, CHARS_PER_TOKEN, render_answer, render_message, render_prompt

#: The analysis's `tokenizer` when it counts in the simulator's units.
SIM_UNITS = "trajbench-sim (~4 characters per token, its own prompt format)"


class _Counter(TextCounter):
    """Token i of a text is its characters [4i, 4i + 4): a count is the length over 4, rounded
    up, and a text may be counted in pieces cut at multiples of 4 (what `Tally` needs)."""

    def __init__(self) -> None:
        super().__init__(lambda text: [0] * -(-len(text) // CHARS_PER_TOKEN), (), safe_cuts=False)

    def count(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN)

    def last_cut(self, text: str) -> int:
        return len(text) - len(text) % CHARS_PER_TOKEN


class _Session:
    """One growing prompt in the simulator's format: the system message, the tool list, then one
    block per message; the generation header closes it."""

    def __init__(self, tools: list[dict[str, Any]] | None) -> None:
        self.tools = tools
        self.started = False

    def append(self, messages: list[dict[str, Any]]) -> Edit:
        if not self.started:
            self.started = True
            return Edit(render_prompt(messages, self.tools)[: -len(ASSISTANT_HEADER)])
        return Edit("".join(render_message(m) for m in messages))

    def suffix(self) -> str:
        return ""

    def generation(self) -> str:
        return ASSISTANT_HEADER


class _Renderer:
    template_text = "trajbench-sim prompt format"

    def session(self, tools: list[dict[str, Any]] | None) -> _Session:
        return _Session(tools)

    def answer_text(self, message: dict[str, Any]) -> str:
        return ASSISTANT_HEADER + render_answer(
            message.get("content"), message.get("reasoning_content"), message.get("tool_calls")
        )


def sim_units() -> ChatTokenizer:
    """A tokenizer that renders and counts prompts exactly as the simulator does by default."""
    counter = _Counter()
    return ChatTokenizer(
        SIM_UNITS,
        encode=counter.encode,
        specials=[],
        renderer=_Renderer(),
        vocab_bytes=b"approx-4chars",
        counter=counter,
    )
