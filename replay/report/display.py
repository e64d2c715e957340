"""The status of a run on stderr (`traces.Progress`, `--progress`): turns done of planned,
errors, tok/s, active and waiting slots, window state; a live line on a terminal, a plain
status line every few seconds otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import traces

from ..results import Record


@dataclass
class RunState:
    """Running totals the parent keeps as records arrive (the display reads them)."""

    total_turns: int
    done: int = 0
    errors: int = 0
    aborted: int = 0
    output_tokens: int = 0
    first_send_ns: int | None = None
    interrupted: bool = False  # Ctrl-C/SIGTERM asked the run to stop early
    errors_by_kind: dict[str, int] = field(default_factory=dict)

    def add(self, r: Record) -> None:
        self.done += 1
        if r.error_kind == "aborted":
            self.aborted += 1
        elif r.error_kind is not None:
            self.errors += 1
        if r.error_kind is not None:
            self.errors_by_kind[r.error_kind] = self.errors_by_kind.get(r.error_kind, 0) + 1
        if r.ok:
            self.output_tokens += r.output_tokens() or 0
        if r.error_kind != "aborted" and (self.first_send_ns is None or r.t_send_ns < self.first_send_ns):
            self.first_send_ns = r.t_send_ns

    def tok_per_s(self, now_ns: int) -> float:
        if self.first_send_ns is None or now_ns <= self.first_send_ns:
            return 0.0
        return self.output_tokens / ((now_ns - self.first_send_ns) / 1e9)


def run_progress(
    state: RunState,
    status: Callable[[], tuple[int, int]],
    *,
    concurrency: int,
    window_closed: Callable[[], bool],
    mode: str = "auto",
) -> traces.Progress:
    """The status of a run (`traces.Progress`): turns done of planned, then, as room allows,
    errors, output tok/s, aborted turns, active and waiting slots, and the window's state. The
    run's sink advances it as each record arrives."""

    def extras() -> list[str]:
        active, waiting = status()
        s = state
        return [
            f"errors {s.errors:,}",
            f"{s.tok_per_s(time.monotonic_ns()):,.0f} tok/s",
            f"aborted {s.aborted:,}" if s.aborted else "",
            f"{active} active {waiting} waiting /{concurrency}",
            "window closed" if window_closed() else "window open",
        ]

    return traces.Progress("replay", total=state.total_turns, unit="turns", mode=mode, extras=extras)
