"""Template drift evidence for `trajbench analyze cache --template-check FILE` (docs/cache.md).

A `trajbench traces check-template --json FILE` report says, for sampled turns, where the engine's
tokenisation of the prompt first parts from the client's. The engine keys its prefix cache on its
own tokens: a turn whose prompt (or whose session's previous prompt, the one the cache holds)
parts from the client's before the end of the turn's ideal reusable prefix cannot hit as much as
the client computes, whatever the cache does. This module reads such a report, checks that it
measured the run's dataset in the run tokenizer's tokens, and answers per turn.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

import traces

from ..engine import TemplateParity
from ..errors import ReplayError

#: Where the fix for a bad file is explained.
_HOW = "run `trajbench traces check-template SHARDS --endpoint URL --json FILE` on the shards the run replayed"


@dataclass(frozen=True)
class CheckedTurn:
    """One checked turn: where the engine's ids first part from the client's (None: identical),
    and the client's token count of that prompt (a divergence there or later is text the engine
    adds after the whole prompt, so the client's prompt is a prefix of the engine's)."""

    divergence: int | None
    client_tokens: int

    @property
    def inside(self) -> int | None:
        """The divergence when it lies inside the client's prompt, else None."""
        return self.divergence if self.divergence is not None and self.divergence < self.client_tokens else None


@dataclass(frozen=True)
class Coverage:
    """What the check says of one run turn: whether it checked the turn or the session's previous
    turn, the earliest divergence of those (None: identical or unchecked), and the earliest one
    inside its own checked prompt (the only kind that can part the engine's cache key)."""

    checked: bool
    divergence: int | None
    inside: int | None


#: A turn the check does not cover.
UNCHECKED = Coverage(False, None, None)


@dataclass(frozen=True)
class TemplateCheck:
    """A template-parity report, keyed by the shards' (instance id, turn) of each checked turn."""

    name: str  # the file's name (no folder: the analysis stays the same bytes wherever it is read)
    sha256: str  # of the file's bytes
    turns: dict[tuple[str, int], CheckedTurn]

    def at(self, instance_id: str, turns: tuple[int | None, int]) -> Coverage:
        """The coverage of a run turn by the checks of the stored instance's `turns`."""
        checked = [c for t in turns if t is not None and (c := self.turns.get((instance_id, t))) is not None]
        found = [c.divergence for c in checked if c.divergence is not None]
        inside = [d for c in checked if (d := c.inside) is not None]
        return Coverage(bool(checked), min(found, default=None), min(inside, default=None))


def _parity(path: Path) -> tuple[TemplateParity, bytes]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReplayError(f"{path}: cannot be read ({exc.strerror}); {_HOW} (docs/templates.md)") from None
    try:
        return traces.from_json(TemplateParity, orjson.loads(raw), str(path)), raw
    except (ValueError, traces.ContractError) as exc:
        raise ReplayError(
            f"{path}: not a template-parity report ({exc}); --template-check takes the file "
            f"`traces check-template --json` writes: {_HOW} (docs/templates.md)"
        ) from None


def read_template_check(path: str | os.PathLike[str], content_hash: str, tokenizer: str) -> TemplateCheck:
    """The report at `path`, refused unless it checked the dataset with `content_hash` in the
    tokens of `tokenizer` (positions in another dataset or vocabulary say nothing of this run)."""
    where = Path(path)
    parity, raw = _parity(where)
    if parity.content_hash != content_hash:
        raise ReplayError(
            f"{where}: checked dataset {parity.dataset} with content hash {parity.content_hash[:16]}…, not the run's "
            f"({content_hash[:16]}…); a template check must be of the same shards: {_HOW} (docs/cache.md)"
        )
    if parity.tokenizer != tokenizer:
        raise ReplayError(
            f"{where}: positions are in {parity.tokenizer}'s tokens, the analysis counts with {tokenizer}; "
            f"run the check with --tokenizer {tokenizer}, or analyse with --tokenizer {parity.tokenizer} (docs/cache.md)"
        )
    turns = {(t.instance_id, t.turn): CheckedTurn(t.first_divergence, t.client_tokens) for t in parity.turns}
    return TemplateCheck(where.name, hashlib.sha256(raw).hexdigest(), turns)
