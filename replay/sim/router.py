"""Placing requests on replicas: session affinity, round-robin or least-loaded (a plain registry).

Affinity hashes the session header (docs/requests.md) with BLAKE2b, so a session lands on the same replica
in every run; a request without the header falls back to least-loaded. Comparing per-replica cache
hits in /metrics across routers measures what affinity is worth.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping, Sequence

from .engine import Replica


def _least_loaded(replicas: Sequence[Replica]) -> int:
    return min(range(len(replicas)), key=lambda i: (replicas[i].load, i))


def affinity_index(session: str, n: int) -> int:
    return int.from_bytes(hashlib.blake2b(session.encode("utf-8"), digest_size=8).digest(), "big") % n


class Router:
    def __init__(self, kind: str, replicas: Sequence[Replica], session_header: str) -> None:
        self.kind = kind
        self.replicas = replicas
        self.session_header = session_header
        self._rr = itertools.count()
        self._pick: Callable[[Mapping[str, str]], int] = ROUTERS[kind].__get__(self)

    def pick(self, headers: Mapping[str, str]) -> Replica:
        return self.replicas[self._pick(headers)]

    def _affinity(self, headers: Mapping[str, str]) -> int:
        session = headers.get(self.session_header)
        if not session:
            return _least_loaded(self.replicas)
        return affinity_index(session, len(self.replicas))

    def _round_robin(self, headers: Mapping[str, str]) -> int:
        return next(self._rr) % len(self.replicas)

    def _least(self, headers: Mapping[str, str]) -> int:
        return _least_loaded(self.replicas)


ROUTERS = {
    "affinity": Router._affinity,
    "round-robin": Router._round_robin,
    "least-loaded": Router._least,
}
