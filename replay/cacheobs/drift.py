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

from ..errors import ReplayError
from ..template_parity import TemplateParity

#: Where the fix for a bad file is explained.
_HOW = "run `trajbench traces check-template SHARDS --endpoint URL --json FILE` on the shards the run replayed"


@dataclass(frozen=True)
class TemplateCheck:
    """A template-parity report, keyed by the shards' (instance id, turn) of each checked turn."""

    name: str  # the file's name (no folder: the analysis stays the same bytes wherever it is read)
    sha256: str  # of the file's bytes
    divergence: dict[tuple[str, int], int | None]  # first divergent token position; None: identical

    def at(self, instance_id: str, turns: tuple[int | None, int]) -> tuple[bool, int | None]:
        """(whether any of `turns` was checked, the earliest divergence among those checked)."""
        checked = [(instance_id, t) for t in turns if t is not None and (instance_id, t) in self.divergence]
        found = [d for k in checked if (d := self.divergence[k]) is not None]
        return bool(checked), min(found) if found else None


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
    divergence = {(t.instance_id, t.turn): t.first_divergence for t in parity.turns}
    return TemplateCheck(where.name, hashlib.sha256(raw).hexdigest(), divergence)


def stored_instance_ids(shards: traces.Shards) -> dict[tuple[str, int], str]:
    """(trajectory, repeat) → the shards' instance id; a logical repeat past the stored ones
    replays stored repeat (repeat − 1) % stored + 1, as `ideal` rebuilds it."""
    return {(e.trajectory_id, e.repeat): e.instance_id for e in shards.index}
