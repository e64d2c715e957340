"""Size caps of one turn's response (`--max-header-kb`, `--max-event-mb`, `--max-response-mb`)
and of all of a worker's responses together (`--memory-budget-mb`): what the HTTP client holds of
a server's answers at most."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ReplayError


def format_size(n: int) -> str:
    """A cap as the options state it: `8 MiB`, `64 KiB`."""
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / (1 << 10):g} KiB"


@dataclass(frozen=True)
class ResponseLimits:
    """Size caps of one turn's response; a server that breaks one fails the turn (`too_large`).

    Sized from what a sane server sends: a response head is a few hundred bytes; a chat chunk a
    few hundred, so even a whole 8192-token answer sent as one SSE event stays under 1 MiB; and
    the largest profile answer streamed token by token (~250 bytes per event) is about 2 MB.
    The defaults leave a wide margin (64 KiB, 8 MiB, 64 MiB) while bounding what a hostile or
    broken server can make a run hold in memory.
    """

    max_header_bytes: int = 64 << 10  # status line + headers (--max-header-kb)
    max_event_bytes: int = 8 << 20  # one SSE line or event (--max-event-mb)
    max_response_bytes: int = 64 << 20  # everything received for one turn (--max-response-mb)
    # What one worker's responses in flight may hold together (--memory-budget-mb): a turn's cap
    # is its slot's share of it (`for_slots`), so C slots do not multiply the per-turn cap (8
    # endless streams at 64 MiB each held 0.94-1.24 GB; a held byte costs about 1.5 received).
    memory_budget_bytes: int = 256 << 20
    budget_slots: int = 0  # > 0: max_response_bytes is a share of the budget over these slots

    @property
    def response_hint(self) -> str:
        """How a too_large message says to raise the cap that was hit."""
        if self.budget_slots:
            return (
                f"this worker's share of --memory-budget-mb {self.memory_budget_bytes >> 20} over its "
                f"{self.budget_slots} slots; raise --memory-budget-mb, or spread the slots with --workers"
            )
        return "raise the cap with --max-response-mb"

    def check(self) -> None:
        for name, value in (
            ("--max-header-kb", self.max_header_bytes),
            ("--max-event-mb", self.max_event_bytes),
            ("--max-response-mb", self.max_response_bytes),
            ("--memory-budget-mb", self.memory_budget_bytes),
        ):
            if value < 1:
                raise ReplayError(f"{name} must be >= 1, got {value}")

    def for_slots(self, slots: int) -> ResponseLimits:
        """The caps of each turn of a worker running `slots` slots: the per-turn cap, or the slot's
        share of the memory budget when smaller, but never below `MIN_SHARE_BYTES` (a long answer
        streamed token by token is about 2 MB; past budget / 4 MiB slots per worker the floor
        holds, and --workers spreads them)."""
        share = max(self.memory_budget_bytes // max(slots, 1), MIN_SHARE_BYTES)
        if share >= self.max_response_bytes:
            return self
        return replace(self, max_response_bytes=share, budget_slots=slots)


#: The smallest per-turn cap the memory budget leaves a slot.
MIN_SHARE_BYTES = 4 << 20

#: The default caps as one shared value for signature and field defaults (the class is frozen).
DEFAULT_LIMITS = ResponseLimits()
