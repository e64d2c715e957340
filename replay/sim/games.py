"""How the simulator games the agentic audits (`--game`, docs/audits.md), so a test can show that
each audit catches the cheat it is written against and passes the honest simulator.

| game | what the simulator does | the audit that catches it |
|---|---|---|
| `generated-reuse` | its prefix cache also matches prompts with every whitespace character taken out, so the history marker's one space (docs/history-marker.md) no longer stops the match inside the answer it generated | cache exploit |
| `cross-session` | its prefix cache also matches prompts with the salts taken out (docs/salting.md), so other trajectories' and other repeats' prompts are reused | cache exploit |
| `response-cache` | it keeps every answer by its prompt, across runs and cache resets, and serves a prompt it has seen again at once, its whole prompt counted as cached | warm cache |
| `truncate` | every answer ends at its first token (`finish_reason: length`) | output consistency |

The two cache games keep a second cache beside the honest one (`TextCache`): chained hashes of
fixed-size pieces of the prompt text with the ignored characters removed, so a prompt matches
as far as its text does once they are gone; the match is mapped back to the prompt's own text and
counted in its tokens, whole blocks only. A request is reported cached by the larger of the two.
"""

from __future__ import annotations

import re

#: What each cache game takes out of a text before matching it.
IGNORED = {
    "generated-reuse": re.compile(r"\s+"),
    "cross-session": re.compile(r"\[salt: [0-9a-f]+\]"),
}
#: Characters per piece of the second cache: small, so a match stops close to where the text parts.
PIECE = 16


class TextCache:
    """A prefix cache over text with `ignored` removed (one per replica; unbounded: it serves tests)."""

    def __init__(self, ignored: re.Pattern[str]) -> None:
        self.ignored = ignored
        self._keys: set[int] = set()

    def _kept(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The text without the ignored characters, and the spans of `text` it keeps."""
        spans: list[tuple[int, int]] = []
        pos = 0
        for m in self.ignored.finditer(text):
            if m.start() > pos:
                spans.append((pos, m.start()))
            pos = m.end()
        if pos < len(text):
            spans.append((pos, len(text)))
        return "".join(text[a:b] for a, b in spans), spans

    @staticmethod
    def _keys_of(kept: str) -> list[int]:
        keys: list[int] = []
        prev = 0
        for start in range(0, len(kept) - len(kept) % PIECE, PIECE):
            prev = hash((prev, kept[start : start + PIECE]))
            keys.append(prev)
        return keys

    def insert(self, text: str) -> None:
        self._keys.update(self._keys_of(self._kept(text)[0]))

    def match(self, text: str) -> int:
        """How many leading characters of `text` the cache holds, ignored characters aside."""
        kept, spans = self._kept(text)
        n = 0
        for key in self._keys_of(kept):
            if key not in self._keys:
                break
            n += 1
        left = n * PIECE
        if left == 0:
            return 0
        for a, b in spans:
            if left <= b - a:
                return a + left
            left -= b - a
        return len(text)

    def clear(self) -> None:
        self._keys.clear()


def text_cache(game: str) -> TextCache | None:
    """The second cache a game keeps (None: the honest cache alone)."""
    ignored = IGNORED.get(game)
    return TextCache(ignored) if ignored is not None else None
