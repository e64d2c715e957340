"""How long the synthetic recorded answers are, and how their text is assembled to that length.

The official set's answers come from the reference model, whose mean output per turn is what the
OSL band of docs/accuracy.md is built on (Kimi K3: 390–475 tokens per turn), so a perfect model replaying
the synthetic set must land inside it. Each part of an answer (a coding turn's reasoning, a
workflow reply…) gets a token target drawn from a long-tailed lognormal, and its text is then
assembled sentence by sentence from seeded phrase banks until it reaches that many characters
(`CHARS_PER_TOKEN`, measured on this generator's text with the Qwen3.6 tokenizer; the
simulator's 4 characters per token gives about the same count).

Targets are drawn *stratified* (`Lengths`): every block of 16 draws takes one value from each
sixteenth of the distribution, in shuffled order. Single turns keep the full spread (50-token
turns beside 2,000-token ones), but the mean of even a small set (the 0.01-scale demo: ~300
turns) stays close to the target instead of swinging with a few tail draws.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from statistics import NormalDist

#: Characters per Qwen3.6 token of this generator's reasoning prose (mixed English, identifiers,
#: paths and quoted code); the simulator counts 4.
CHARS_PER_TOKEN = 4.1
_BLOCK = 16
_INV = NormalDist().inv_cdf


class Lengths:
    """Token targets for one answer part within one trajectory: lognormal, stratified in blocks.

    `mean` is the mean before clipping to [lo, hi] (the clip moves it by well under 1 % for the
    parameters used here); the median is `mean / exp(sigma**2 / 2)`.
    """

    def __init__(self, rng: random.Random, mean: float, sigma: float, lo: int, hi: int) -> None:
        self.rng = rng
        self.median = mean / math.exp(sigma * sigma / 2)
        self.sigma = sigma
        self.lo, self.hi = lo, hi
        self._queue: list[float] = []

    def __call__(self) -> int:
        if not self._queue:
            strata = list(range(_BLOCK))
            self.rng.shuffle(strata)
            self._queue = [(k + self.rng.random()) / _BLOCK for k in strata]
        u = min(max(self._queue.pop(), 1e-9), 1 - 1e-9)
        return int(min(self.hi, max(self.lo, self.median * math.exp(self.sigma * _INV(u)))))

    def chars(self) -> int:
        """The next target, in characters of generated text."""
        return int(self() * CHARS_PER_TOKEN)


def compose(
    rng: random.Random, budget: int, head: list[str], pick: Callable[[], str], tail: list[str] | None = None
) -> str:
    """Sentences `head`, then `pick()` until about `budget` characters are reached, then `tail`.

    Sentences are grouped into paragraphs of two to five; a sentence that starts with a newline
    (a list or a code block) stands as its own paragraph. The head and tail count towards the
    budget, so a small budget gives just head and tail.
    """
    tail = tail or []
    body = list(head)
    used = sum(len(s) + 1 for s in head) + sum(len(s) + 1 for s in tail)
    while True:
        s = pick()
        if used + len(s) // 2 > budget:  # stop at the sentence boundary nearest to the budget
            break
        body.append(s)
        used += len(s) + 1
    body += tail
    paras: list[str] = []
    cur: list[str] = []
    size = rng.randint(2, 5)
    for s in body:
        if s.startswith("\n"):
            if cur:
                paras.append(" ".join(cur))
                cur = []
            paras.append(s.strip("\n"))
            continue
        cur.append(s)
        if len(cur) >= size:
            paras.append(" ".join(cur))
            cur = []
            size = rng.randint(2, 5)
    if cur:
        paras.append(" ".join(cur))
    return "\n\n".join(paras)


class Slots(dict[str, object]):
    """Values for `str.format_map`: fixed ones stored, the rest drawn afresh on every use.

    `Slots(fixed, draw)`: `fixed` maps a slot to its value for the whole answer (the file being
    edited); `draw` maps a slot to a function called each time the slot appears (a random
    identifier), so one sentence template gives many different sentences.
    """

    def __init__(self, fixed: dict[str, object], draw: dict[str, Callable[[], object]]) -> None:
        super().__init__(fixed)
        self.draw = draw

    def __missing__(self, key: str) -> object:
        return self.draw[key]()


def sentences(rng: random.Random, bank: tuple[str, ...], slots: Slots) -> Callable[[], str]:
    """A `compose` picker: the templates of `bank` in shuffled order, filled from `slots`.

    A template comes back only after the whole bank was used (a shuffle bag), so a long answer
    does not repeat itself sentence after sentence.
    """
    bag: list[str] = []

    def pick() -> str:
        if not bag:
            bag.extend(bank)
            rng.shuffle(bag)
        return bag.pop().format_map(slots)

    return pick
