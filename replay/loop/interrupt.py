"""Ctrl-C and SIGTERM for a replay or a whole sweep: the first asks to stop, a second to hurry.

One `Interrupt` is installed on the event loop for as long as the work lasts, so a signal that
arrives while the simulator starts, while results are written or between two sweep points is
recorded rather than lost (or, for SIGTERM, fatal). The run in progress listens to it: the
first signal stops issuing and drains, a second cancels what is in flight. A sweep shares one
`Interrupt` across its points, which is how it knows to stop after the point that was
interrupted instead of starting the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator
from typing import Any

#: The signals that stop a replay; `cli` exits with 128 + the signal number.
SIGNALS = (signal.SIGINT, signal.SIGTERM)

Listener = Callable[[int], None]  # called with how many signals have arrived so far


class Interrupt:
    def __init__(self) -> None:
        self.signals: list[int] = []
        self._listener: Listener | None = None

    @property
    def requested(self) -> bool:
        return bool(self.signals)

    @property
    def exit_code(self) -> int:
        """The conventional exit code of the first signal (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + (self.signals[0] if self.signals else signal.SIGINT)

    def _on_signal(self, sig: int) -> None:
        self.signals.append(sig)
        if self._listener is not None:
            self._listener(len(self.signals))

    @contextlib.contextmanager
    def installed(self) -> Iterator[Interrupt]:
        """Handle SIGINT/SIGTERM on the running loop; on exit the previous handlers come back
        (the CLI's SIGTERM handler, asyncio.run's Ctrl-C handler)."""
        loop = asyncio.get_running_loop()
        previous: dict[signal.Signals, Any] = {}
        for sig in SIGNALS:
            try:
                before = signal.getsignal(sig)
                loop.add_signal_handler(sig, self._on_signal, sig)
                previous[sig] = before
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (e.g. embedded in another app): no signal handling
        try:
            yield self
        finally:
            for sig, before in previous.items():
                loop.remove_signal_handler(sig)
                if before is not None:
                    signal.signal(sig, before)

    @contextlib.contextmanager
    def listening(self, listener: Listener) -> Iterator[None]:
        """Call `listener` on every signal while the block runs."""
        self._listener = listener
        try:
            yield
        finally:
            self._listener = None
