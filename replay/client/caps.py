"""Size caps of one turn's response (`--max-header-kb`, `--max-event-mb`, `--max-response-mb`):
what the HTTP client holds of a server's answer at most."""

from __future__ import annotations

from dataclasses import dataclass

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

    def check(self) -> None:
        for name, value in (
            ("--max-header-kb", self.max_header_bytes),
            ("--max-event-mb", self.max_event_bytes),
            ("--max-response-mb", self.max_response_bytes),
        ):
            if value < 1:
                raise ReplayError(f"{name} must be >= 1, got {value}")


#: The default caps as one shared value for signature and field defaults (the class is frozen).
DEFAULT_LIMITS = ResponseLimits()
