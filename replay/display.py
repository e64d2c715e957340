"""The live view of a run on stderr: turns done/total, active and waiting slots, tok/s, errors,
window state. Drawn only on a terminal; piped or captured output gets nothing."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .records import Record


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


class LiveDisplay:
    """`async with LiveDisplay(...)`: refreshes a rich progress line twice a second."""

    def __init__(
        self,
        state: RunState,
        status: Callable[[], tuple[int, int]],
        *,
        concurrency: int,
        window_closed: Callable[[], bool],
        enabled: bool = True,
    ) -> None:
        self.state = state
        self.status = status
        self.concurrency = concurrency
        self.window_closed = window_closed
        self.enabled = enabled and sys.stderr.isatty()
        self._progress = Progress(
            TextColumn("replay"),
            BarColumn(bar_width=16),
            MofNCompleteColumn(),
            TextColumn(
                "turns │ {task.fields[slots]} │ {task.fields[tps]} │ {task.fields[errors]} │ {task.fields[window]}"
            ),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=not self.enabled,
            transient=False,
        )
        self._task_id = self._progress.add_task(
            "replay", total=state.total_turns, slots="", tps="", errors="", window=""
        )
        self._refresher: asyncio.Task[None] | None = None

    def refresh(self) -> None:
        s = self.state
        active, waiting = self.status()
        closed = self.window_closed()
        self._progress.update(
            self._task_id,
            completed=s.done,
            slots=f"{active} active {waiting} waiting /{self.concurrency}",
            tps=f"{s.tok_per_s(time.monotonic_ns()):.0f} tok/s",
            errors=f"errors {s.errors}" + (f" (+{s.aborted} aborted)" if s.aborted else ""),
            window="window closed" if closed else "window open",
        )

    async def _loop(self) -> None:
        while True:
            self.refresh()
            await asyncio.sleep(0.5)

    async def __aenter__(self) -> LiveDisplay:
        if self.enabled:
            self._progress.start()
            self._refresher = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            self.refresh()
            self._progress.stop()
