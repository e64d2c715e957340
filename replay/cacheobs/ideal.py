"""The ideal reusable prefix of every replayed turn, in the run tokenizer's tokens (docs/cache.md).

Each turn's prompt is rebuilt from the shards exactly as the run sent it (`traces.iter_prompts`
with the record's salts and the shards' history markers) and rendered with the run tokenizer's
chat template, as an engine renders it. A turn could reuse:

- *within*: the prefix it shares with its own instance's previous prompt (all of it, unless the
  tool list changed or the template re-renders history), and
- *cross*: beyond that, the prefix it shares with the latest prompt of another instance sent
  before it, which the salts allow only where they agree (the system prompt within one repeat
  under the official salt; whole prompts of other repeats with `--salt none`).

Prompts are compared as text (a binary search over `str.startswith`, C speed), then the shared
text is counted in tokens; a prompt that extends the previous one takes the previous prompt's
running count, so a trajectory costs its new text once. A shared text that ends inside a token
may count one token more than the engine can match: the block-granularity rule allows for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import traces
from traces.tokenizers import ChatTokenizer, Tally

from ..errors import ReplayError
from ..loop import max_stored_repeat
from ..results import Record


@dataclass(frozen=True)
class TurnText:
    """One turn's prompt as the engine renders it, and its length in tokens."""

    turn: int
    text: str
    isl: int


@dataclass(frozen=True)
class Ideal:
    """What one sent turn could have reused: `within` + `cross` tokens of its `isl`; `cross_from`
    is the instance whose prompt gave the cross share (None without one)."""

    isl: int
    within: int
    cross: int
    cross_from: str | None

    @property
    def reusable(self) -> int:
        """At most isl − 1: an engine computes at least the last prompt token."""
        return max(0, min(self.within + self.cross, self.isl - 1))


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings: galloping, then a binary search, with
    C-speed compares; prompts that differ early (other salts) cost a few short compares."""
    hi = min(len(a), len(b))
    lo, step = 0, 64
    while lo < hi:  # gallop: lo is known shared; try twice as far each time
        probe = min(hi, lo + step)
        if a[lo:probe] != b[lo:probe]:
            hi = probe - 1
            break
        lo, step = probe, step * 2
    while lo < hi:  # a[:lo] == b[:lo], and they differ before hi + 1
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def instance_texts(tok: ChatTokenizer, instance: traces.Instance, salt: traces.Salt) -> Iterator[TurnText]:
    """Each turn's rendered prompt (with the generation prompt) and its token count, appending
    each turn's new messages to one render session (a new one when the tool list changes)."""
    session: Any = None
    tally = Tally(tok.counter)
    closed = ""
    tools: Any = None
    sent = 0
    for p in traces.iter_prompts(instance, salt=salt):
        if session is None or p.tools != tools:
            session = tok.renderer.session(list(p.tools) if p.tools else None)
            tools, sent, closed, tally = p.tools, 0, "", Tally(tok.counter)
        edit = session.append(p.messages[sent:])
        sent = len(p.messages)
        if edit.reset:
            closed, tally = edit.text, Tally(tok.counter)
            tally.append(closed)
        else:
            closed += edit.text
            tally.append(edit.text)
        tail = session.suffix() + session.generation()
        yield TurnText(p.row.turn, closed + tail, tally.with_suffix(tail))


def stored_repeat(repeat: int, stored: int) -> int:
    """The stored repeat (1..`stored`) a logical repeat replays: replay cycles over the shards'
    repeats, re-salting each cycle past them as a new repeat (`scheduler.instance_prompts`), so
    the prompts' text comes from the stored repeat and only the salt is the logical one's."""
    return (repeat - 1) % stored + 1


@dataclass(frozen=True)
class StoredAs:
    """The shard instance a run's instance replays, and whether the run rendered it as stored
    (the same salts): a template check renders the stored instance, so its token positions hold
    for the run's prompts only then (another salt tokenises to another length)."""

    instance_id: str
    same_render: bool


class PromptTexts:
    """Each sent turn's rendered prompt, made lazily per instance in turn order, so only every
    instance's current prompt is held, never every turn's (a run's prompts are quadratic in size)."""

    def __init__(self, tok: ChatTokenizer, shards: traces.Shards, salt_mode: str) -> None:
        self.tok = tok
        self.shards = shards
        self.salt_mode = salt_mode
        self._stored_repeats = max_stored_repeat(shards)
        self._gens: dict[str, Iterator[TurnText]] = {}
        self._stored: dict[str, StoredAs] = {}

    def stored(self, instance_id: str) -> StoredAs:
        """What a run instance replays; known once `get` has been asked for one of its records."""
        return self._stored[instance_id]

    def get(self, r: Record) -> TurnText:
        """The prompt of record `r`; an instance's records must be asked for in turn order."""
        gen = self._gens.get(r.instance_id)
        if gen is None:
            try:
                inst = self.shards.find(r.trajectory_id, stored_repeat(r.repeat, self._stored_repeats))
            except traces.TraceError as exc:
                raise ReplayError(f"{exc}; the run's records name an instance its shards do not hold") from None
            first = inst.turns[0]
            same = (r.salt_repeat, r.salt_conversation) == (first.salt_repeat, first.salt_conversation)
            self._stored[r.instance_id] = StoredAs(inst.instance_id, same)
            salt = traces.Salt(self.salt_mode, r.salt_repeat, r.salt_conversation)
            gen = self._gens[r.instance_id] = instance_texts(self.tok, inst, salt)
        for t in gen:
            if t.turn == r.turn:
                return t
        raise ReplayError(
            f"{r.instance_id} turn {r.turn}: not among the shards' turns of this instance (or recorded out of "
            "order); the records do not belong to these shards"
        )


def ideal_prefixes(tok: ChatTokenizer, sent: Iterable[Record], texts: PromptTexts) -> dict[tuple[str, int], Ideal]:
    """The ideal of each record in `sent`, taken in send order."""
    latest: dict[str, tuple[TurnText, str]] = {}  # instance → (its latest prompt sent, trajectory)
    out: dict[tuple[str, int], Ideal] = {}
    for r in sorted(sent, key=lambda r: (r.t_send_ns, r.instance_id, r.turn)):
        key = (r.instance_id, r.turn)
        t = texts.get(r)
        own = latest.get(r.instance_id)
        within_chars = within = 0
        if own is not None:
            prev = own[0]
            if t.text.startswith(prev.text):
                within_chars, within = len(prev.text), prev.isl
            else:
                within_chars = common_prefix(t.text, prev.text)
                within = tok.count_text(t.text[:within_chars]) if within_chars else 0
        best, source = within_chars, None
        for other, (o, trajectory) in latest.items():
            if other == r.instance_id or (within_chars and trajectory != r.trajectory_id):
                continue  # past a first turn, only another repeat of the same trajectory can share more
            c = common_prefix(t.text, o.text)
            if c > best:
                best, source = c, other
        cross = max(0, tok.count_text(t.text[:best]) - within) if source is not None else 0
        out[key] = Ideal(t.isl, within, cross, source)
        latest[r.instance_id] = (t, r.trajectory_id)
    return out
