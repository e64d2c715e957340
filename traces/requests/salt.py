"""Cache-isolation salts (docs/salting.md).

`mlperf` is the official form: 16-bit BLAKE2b of the repeat number and of the source id, so it
reproduces the reference client's prompts byte for byte. `strong` widens both to 64 bits derived
from a declared seed (research only: it removes the ~3 colliding pairs of the official set).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..errors import TraceError

SALT_MODES = ("mlperf", "strong", "none")


def blake2b_hex(text: str, digest_size: int = 2) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=digest_size).hexdigest()


@dataclass(frozen=True)
class Salt:
    """The pair of salts of one trajectory instance; empty strings when salting is off."""

    mode: str
    repeat: str
    conversation: str

    def apply(self, system: str) -> str:
        """The salted system prompt: `[salt: R]\\n\\n<system>\\n\\n[salt: C]`."""
        if self.mode == "none":
            return system
        return f"[salt: {self.repeat}]\n\n{system}\n\n[salt: {self.conversation}]"


def make_salt(mode: str, source_id: str, repeat: int, seed: int = 0) -> Salt:
    if mode == "mlperf":
        return Salt(mode, blake2b_hex(str(repeat)), blake2b_hex(source_id))
    if mode == "strong":
        return Salt(
            mode,
            blake2b_hex(f"trajbench-strong:{seed}:repeat:{repeat}", 8),
            blake2b_hex(f"trajbench-strong:{seed}:conversation:{source_id}", 8),
        )
    if mode == "none":
        return Salt(mode, "", "")
    raise TraceError(f"unknown salt mode {mode!r}; choose one of {', '.join(SALT_MODES)}")
