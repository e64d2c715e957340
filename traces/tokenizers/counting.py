r"""Exact, cached token counting of rendered chat text, and a running count that grows by appends.

Two facts make counting cheap without changing a single count:

- BPE tokenizers (tiktoken and byte-level Hugging Face ones) split text at special tokens first and
  tokenize the pieces in between independently, so a count is the sum over those pieces.
- Their pre-tokenizer regexes never join a newline with a following letter or digit, so inside a
  piece the text can also be cut before a letter/digit that starts a line ("safe" cuts) and each
  chunk counted alone, from a cache. A long shared system prompt or tool list is therefore
  tokenized once per process, not once per trajectory, and a salt in its first line only costs
  that line. The cut is safe only after a newline that follows a non-whitespace character:
  GPT-2's rule (`\s+(?!\S)|\s+`, used by byte-level GGUF and many Hugging Face vocabularies)
  splits a run of whitespace by what follows it, so `"x\n\nWhen"` is x, \n, \n, When whole but
  x, \n\n, When when cut before the letter (4 tokens against 3 with a `\n\n` merge). After
  one newline preceded by text, every rule in use ends the pre-token at the newline either way.

`Tally` keeps the count of a text that only grows at its end: it stores the count up to the last
safe cut and the short tail after it, so an append re-tokenizes only the tail plus the new text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

#: A cut before a line that starts with a letter or digit, after a single newline that follows a
#: non-whitespace character: no pre-token spans it, whichever split rule (see above).
_SAFE_CUT = re.compile(r"(?<=\S\n)(?=[^\W_])")

#: Texts shorter than this are encoded directly, without cuts or cache.
_SHORT = 256

#: Cache bound in characters: cleared when full (most chunks of a build are seen only a few times;
#: the ones that matter, shared system prompts and tool lists, come back right away).
_CACHE_CHARS = 32_000_000


class TextCounter:
    """Counts tokens of text that may contain special tokens, exactly as `encode` would."""

    def __init__(self, encode: Callable[[str], list[int]], specials: Iterable[str], *, safe_cuts: bool) -> None:
        self.encode = encode
        names = sorted((s for s in specials if s), key=len, reverse=True)
        self._special = re.compile("|".join(re.escape(s) for s in names)) if names else None
        self.safe_cuts = safe_cuts
        self.short = _SHORT
        self._cache: dict[str, int] = {}
        self._cached_chars = 0

    def _chunk(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            if self._cached_chars > _CACHE_CHARS:
                self._cache.clear()
                self._cached_chars = 0
            n = self._cache[text] = len(self.encode(text))
            self._cached_chars += len(text)
        return n

    def _plain(self, text: str) -> int:
        """Tokens of text holding no special token."""
        if not text:
            return 0
        if len(text) < self.short:  # cheaper to encode than to split and look up
            return len(self.encode(text))
        if not self.safe_cuts:
            return self._chunk(text)
        return sum(self._chunk(part) for part in _SAFE_CUT.split(text))

    def count(self, text: str) -> int:
        if self._special is None:
            return self._plain(text)
        total = 0
        start = 0
        for m in self._special.finditer(text):
            total += self._plain(text[start : m.start()]) + 1
            start = m.end()
        return total + self._plain(text[start:])

    def last_cut(self, text: str) -> int:
        """Offset of the last position after which `text` may be counted separately."""
        cut = 0
        if self._special is not None:
            for m in self._special.finditer(text):
                cut = m.end()
        if self.safe_cuts:
            nl = text.rfind("\n")
            while nl >= cut:
                if nl + 1 < len(text) and _SAFE_CUT.match(text, nl + 1) and nl - 1 >= cut:
                    return nl + 1
                nl = text.rfind("\n", cut, nl)
        return cut


class Tally:
    """Running token count of a text that is only ever appended to."""

    __slots__ = ("counter", "stable", "tail", "tail_tokens")

    def __init__(self, counter: TextCounter) -> None:
        self.counter = counter
        self.stable = 0  # tokens of the text up to the last safe cut
        self.tail = ""  # the text after it
        self.tail_tokens = 0

    @property
    def tokens(self) -> int:
        return self.stable + self.tail_tokens

    def append(self, text: str) -> int:
        """Append text; return how many tokens the whole text grew by."""
        if not text:
            return 0
        before = self.tokens
        joined = self.tail + text
        cut = self.counter.last_cut(joined)
        self.stable += self.counter.count(joined[:cut]) if cut else 0
        self.tail = joined[cut:]
        self.tail_tokens = self.counter.count(self.tail)
        # The old tail was counted in `stable` neither before nor now: it is inside `joined`.
        return self.tokens - before

    def with_suffix(self, text: str) -> int:
        """Tokens of the text with `text` appended, without appending it."""
        if not text:
            return self.tokens
        return self.stable + self.counter.count(self.tail + text)
