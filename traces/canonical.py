"""Canonical JSON and hashing: the single definition every content hash in trajbench uses.

Determinism across machines needs one byte form for a JSON value: sorted keys, compact
separators, UTF-8 without ASCII escaping. The simulator's oracle mode and the shard builder both
hash prompts with `messages_sha256`, so they agree on what "the same prompt" means.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

import orjson


def canonical_json(value: Any) -> str:
    """The one text form of a JSON value used for hashing and for JSON stored in shards."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def source_json(value: Any) -> str:
    """JSON text in the dataset's own key order (compact, UTF-8): what shards store and what
    writers and exports emit, so the bytes follow the source (docs/requests.md)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # what orjson cannot hold (an integer beyond 64 bits): the slower encoder
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def source_loads(text: str) -> Any:
    """Inverse of `source_json` (key order kept)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """A file's sha256, read in 1 MiB blocks (shard files and sources can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_line(row: dict[str, Any]) -> bytes:
    """One shard row's share of a dataset's content hash: its canonical JSON and a newline.

    The content hash is the sha256 of these lines for every row in instance order; the build
    computes it and `traces.shards.verify` recomputes it with this same function, so the two cannot
    drift apart.
    """
    return canonical_json(row).encode("utf-8") + b"\n"


class MessagesHasher:
    """Incremental sha256 of `canonical_json(messages)` as messages are appended.

    Hashing each turn's whole prompt from scratch is quadratic in trajectory length; this keeps
    the running state of "[m1,m2,…" and closes a copy per turn, which is linear.
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256(b"[")
        self._n = 0
        self.chars = 2  # length of the canonical JSON text, brackets included

    def extend(self, messages: Iterable[dict[str, Any]]) -> None:
        for m in messages:
            text = canonical_json(m)
            if self._n:
                self._h.update(b",")
                self.chars += 1
            self._h.update(text.encode("utf-8"))
            self.chars += len(text)
            self._n += 1

    def hexdigest(self) -> str:
        h = self._h.copy()
        h.update(b"]")
        return h.hexdigest()


def messages_sha256(messages: list[dict[str, Any]]) -> str:
    """sha256 of a request's message list in canonical form (equal to `MessagesHasher`'s)."""
    return sha256_text(canonical_json(messages))
