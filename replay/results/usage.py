"""The server's `usage` against the client's own count of the same answer (docs/metrics.md).

Output tokens are what the headline divides, and a server reports its own: an inflated
`usage.completion_tokens` would multiply a system's throughput, a negative one make it negative.
So the client tokenizer's count (the reference's method) is the one the numbers use whenever the
run has it, and the server's count is only cross-checked against it, per turn:

- *negative*: fewer than 0 tokens;
- *absurd*: more tokens than the answer has characters plus `ABSURD_MARGIN_TOKENS` (a token is
  at least one character of the streamed text, save a few special tokens the margin allows);
- *off*: more than max(`OFF_TOKENS`, `OFF_SHARE` of the client count) away from the client count
  (chat-template framing and an end-of-turn token explain a few tokens, not more).

A negative count is never used, not even without a client count (the turn's output tokens are
then unknown); an absurd one is only flagged, since a server that hides text it generated (its
reasoning) reports more tokens than it streams, which a run without a tokenizer still measures by.
An official point fails when any turn's usage is negative or absurd, or when the mean server
usage differs from the mean client count by more than `MEAN_SHARE` (docs/compliance.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from .records import Record

ABSURD_MARGIN_TOKENS = 32
OFF_TOKENS = 8
OFF_SHARE = 0.10
MEAN_SHARE = 0.05

#: The flags a turn's usage can get, the impossible ones first.
IMPOSSIBLE = ("negative", "absurd")
FLAGS = (*IMPOSSIBLE, "off")


def impossible_usage(server: int, chars: int) -> str | None:
    """Why a server's output-token count cannot be true of an answer of `chars` characters."""
    if server < 0:
        return "negative"
    if server > chars + ABSURD_MARGIN_TOKENS:
        return "absurd"
    return None


def off_by_too_much(server: int, client: int) -> bool:
    return abs(server - client) > max(OFF_TOKENS, OFF_SHARE * client)


def usage_flag(server: int | None, client: int | None, chars: int) -> str | None:
    """The flag of one turn's usage (None: nothing to say, or no usage to judge)."""
    if server is None:
        return None
    bad = impossible_usage(server, chars)
    if bad is not None:
        return bad
    if client is not None and off_by_too_much(server, client):
        return "off"
    return None


@dataclass(frozen=True)
class FlaggedTurn:
    instance_id: str
    turn: int
    flag: str
    server: int
    client: int | None
    chars: int

    def describe(self) -> str:
        client = "no client count" if self.client is None else f"client {self.client}"
        return (
            f"{self.instance_id} turn {self.turn}: usage {self.server} ({self.flag}; {client}, {self.chars} characters)"
        )


@dataclass(frozen=True)
class UsageCheck:
    """The cross-check over a run's answered turns: how many the client counted, how many had
    usage, the flags by kind with the first few turns of each, and both means over the turns
    that have both counts. The limits it is judged by ride along (docs/metrics.md)."""

    absurd_margin: ClassVar[int] = ABSURD_MARGIN_TOKENS
    off_tokens: ClassVar[int] = OFF_TOKENS
    off_share: ClassVar[float] = OFF_SHARE
    mean_share: ClassVar[float] = MEAN_SHARE
    impossible_flags: ClassVar[tuple[str, ...]] = IMPOSSIBLE

    turns: int
    client_counted: int
    server_counted: int
    both: int
    flags: dict[str, int] = field(default_factory=dict)
    examples: tuple[FlaggedTurn, ...] = ()
    client_mean: float | None = None
    server_mean: float | None = None

    @property
    def mean_difference(self) -> float | None:
        """(server − client) / client of the means; None without both counts (or a client mean of 0)."""
        if self.client_mean is None or self.server_mean is None or self.client_mean == 0:
            return None
        return (self.server_mean - self.client_mean) / self.client_mean

    @property
    def impossible(self) -> int:
        return sum(self.flags.get(k, 0) for k in IMPOSSIBLE)


def cross_check(records: Iterable[Record], examples: int = 3) -> UsageCheck:
    """Server usage against the client count on every answered turn (`Record.ok`)."""
    flags: Counter[str] = Counter()
    shown: list[FlaggedTurn] = []
    per_flag: Counter[str] = Counter()
    turns = client_n = server_n = 0
    client_sum = server_sum = 0
    both = 0
    for r in records:
        if not r.ok:
            continue
        turns += 1
        client, server = r.client_output_tokens, r.completion_tokens
        client_n += client is not None
        server_n += server is not None
        chars = r.output_chars()
        flag = usage_flag(server, client, chars)
        if flag is not None and server is not None:
            flags[flag] += 1
            if per_flag[flag] < examples:
                per_flag[flag] += 1
                shown.append(FlaggedTurn(r.instance_id, r.turn, flag, server, client, chars))
        if client is not None and server is not None:
            both += 1
            client_sum += client
            server_sum += server
    return UsageCheck(
        turns=turns,
        client_counted=client_n,
        server_counted=server_n,
        both=both,
        flags={k: flags[k] for k in FLAGS if flags[k]},
        examples=tuple(shown),
        client_mean=client_sum / both if both else None,
        server_mean=server_sum / both if both else None,
    )
