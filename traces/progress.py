"""Progress of a long step on stderr: done/total, elapsed time and an ETA, drawn three ways.

Every long command (`traces build`, `traces stats`, `replay run`, `eval inline`, …) reports
through one `Progress`, so they all look and behave alike and take the same `--progress` option:

- `rich`: one live line, redrawn twice a second and fitted to the terminal's width. What does
  not fit is left out in a fixed order (the bar first, then the step's extra fields from the
  last), so the count, the elapsed time and the ETA stay visible even at 80 columns.
- `plain`: one status line every few seconds (`PLAIN_SECONDS`, or the environment variable
  `PROGRESS_SECONDS_ENV`), for logs of CI jobs, nohup or Slurm, where a redrawn line would be
  noise; a last line at the end, if any was printed. A step shorter than the interval prints
  nothing, so quick commands keep a clean stderr.
- `none`: nothing.
- `auto` (the default) is `rich` on a terminal and `plain` otherwise.

Lines are drawn from a thread, so a busy event loop or a long synchronous call never stops the
status; the step only bumps counters (`advance`). rich is imported only when a rich line is
drawn: the simulator process imports traces and should not pay for it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from .errors import TraceError
from .option import Option

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.live import Live
    from rich.text import Text

#: The `--progress` choices.
PROGRESS_MODES = ("auto", "rich", "plain", "none")
#: Seconds between two plain status lines: often enough to see a run move in a log, rarely
#: enough that a day-long run logs a few thousand lines, not millions.
PLAIN_SECONDS = 5.0
#: Environment variable that changes the plain interval (e.g. 60 for a long Slurm job).
PROGRESS_SECONDS_ENV = "TRAJBENCH_PROGRESS_SECONDS"
#: `--progress`, the same on every long command: what a person watches, never part of a run's
#: record.
PROGRESS_OPTION = Option(
    "progress",
    f"Progress on stderr: rich (a live line), plain (a status line every {PLAIN_SECONDS:g} s; "
    f"{PROGRESS_SECONDS_ENV} sets another interval), none; auto = rich on a terminal, else plain.",
    choices=PROGRESS_MODES,
    default="auto",
    recorded=False,
)
#: Redraws per second of the rich line.
RICH_REFRESH = 2.0

Extras = Callable[[], Sequence[str]]


def plain_seconds() -> float:
    """The plain interval: `PROGRESS_SECONDS_ENV` when set, else `PLAIN_SECONDS`."""
    text = os.environ.get(PROGRESS_SECONDS_ENV, "").strip()
    if not text:
        return PLAIN_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise TraceError(
            f"{PROGRESS_SECONDS_ENV}={text!r}: not a number of seconds > 0; unset it or give e.g. {PROGRESS_SECONDS_ENV}=30"
        )
    return value


def clock(seconds: float) -> str:
    """H:MM:SS, as the status line shows elapsed time and the ETA."""
    s = max(0, int(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """`with Progress("build", total=n, mode=...) as p: … p.advance(k)`: the status of one step.

    `total` may be unknown (None) and set later (`set_total`); without it the line shows the
    rate instead of an ETA. `extras` returns the step's own fields (`42 tok/s`, `errors 0`),
    read each time a line is drawn, from the drawing thread. A library function takes an
    optional `Progress` and only calls `advance`, `set_total` and `stage`."""

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        unit: str = "turns",
        mode: str = "auto",
        extras: Extras | None = None,
        stream: TextIO | None = None,
    ) -> None:
        if mode not in PROGRESS_MODES:
            raise TraceError(f"--progress {mode!r}: choose one of {', '.join(PROGRESS_MODES)}")
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self.extras = extras
        self._mode = mode
        self._stream = stream
        self._start = self._stage_start = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None
        self._printed = 0  # plain lines written so far

    # ------------------------------------------------------------ what a step reports
    def advance(self, n: int = 1) -> None:
        self.done += n

    def set_total(self, total: int | None) -> None:
        self.total = total

    def stage(self, label: str, *, total: int | None = None, unit: str | None = None) -> None:
        """Start the next stage of the step (its own count and ETA; the elapsed time runs on)."""
        self.label, self.total, self.done = label, total, 0
        self._stage_start = time.monotonic()
        if unit is not None:
            self.unit = unit

    # ------------------------------------------------------------ the line
    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def eta(self) -> float | None:
        """Seconds left at the stage's rate so far; None before the first unit or without a total."""
        since = time.monotonic() - self._stage_start
        if self.total is None or self.done <= 0 or since <= 0:
            return None
        return max(0, self.total - self.done) * since / self.done

    def parts(self) -> tuple[str, list[str], list[str]]:
        """(count, the step's extras, [elapsed, ETA or rate]): the pieces every line is made of."""
        count = f"{self.done:,}/{self.total:,} {self.unit}" if self.total is not None else f"{self.done:,} {self.unit}"
        extras = [e for e in self._extras() if e]
        timing = [f"elapsed {clock(self.elapsed())}"]
        eta = self.eta()
        if eta is not None:
            timing.append(f"eta {clock(eta)}")
        elif self.total is None and self.done > 0:
            since = time.monotonic() - self._stage_start
            if since > 0:
                timing.append(f"{self.done / since:,.0f} {self.unit}/s")
        return count, extras, timing

    def _extras(self) -> Sequence[str]:
        """The step's extras; a failure to read them (a counter changing under the drawing
        thread) shows none this time rather than ending the step."""
        if self.extras is None:
            return ()
        try:
            return self.extras()
        except Exception:
            return ()

    def line(self) -> str:
        """The plain status line: everything, however long."""
        count, extras, timing = self.parts()
        return "  ".join([self.label, count, *extras, *timing])

    def fitted(self, width: int) -> tuple[list[str], int]:
        """The pieces of the line that fit `width` columns, and the room left for a bar.

        Kept first: label, count, elapsed, ETA; then the extras in their order; the bar (at
        least 10 columns) only in what is left."""
        count, extras, timing = self.parts()
        core = [self.label, count, *timing]
        used = len("  ".join(core))
        kept: list[str] = []
        for e in extras:
            if used + 2 + len(e) > width:
                break
            kept.append(e)
            used += 2 + len(e)
        bar = width - used - 2 if self.total is not None else 0
        return [self.label, count, *kept, *timing], (min(bar, 30) if bar >= 10 else 0)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        from rich.text import Text

        pieces, bar = self.fitted(options.max_width - 1)
        text = Text()
        text.append(pieces[0], style="bold")
        if bar:
            total = self.total or 0
            full = bar if total <= 0 else min(bar, bar * self.done // total)
            text.append("  ")
            text.append("━" * full, style="green")
            text.append("━" * (bar - full), style="grey23")
        for piece in pieces[1:]:
            text.append("  " + piece)
        text.no_wrap = True
        text.overflow = "crop"
        yield text

    # ------------------------------------------------------------ drawing
    def _resolved(self, stream: TextIO) -> str:
        if self._mode != "auto":
            return self._mode
        isatty = getattr(stream, "isatty", None)
        return "rich" if isatty is not None and isatty() else "plain"

    def __enter__(self) -> Progress:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self._start = self._stage_start = time.monotonic()
        stream = self._stream if self._stream is not None else sys.stderr
        mode = self._resolved(stream)
        if mode == "plain":
            interval = plain_seconds()
            self._thread = threading.Thread(target=self._plain, args=(stream, interval), daemon=True)
            self._thread.start()
        elif mode == "rich":
            from rich.console import Console
            from rich.live import Live

            console = Console(file=stream, force_terminal=True if self._mode == "rich" else None)
            self._live = Live(
                self,
                console=console,
                refresh_per_second=RICH_REFRESH,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def stop(self) -> None:
        """Stop drawing: the rich line is left in its final state; plain mode ends with a last
        line if it printed any."""
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            if self._printed:
                self._write(self._stream if self._stream is not None else sys.stderr)

    def _plain(self, stream: TextIO, interval: float) -> None:
        while not self._stop.wait(interval):
            self._write(stream)

    def _write(self, stream: TextIO) -> None:
        try:
            stream.write(self.line() + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr never stops the step
            return
        self._printed += 1
