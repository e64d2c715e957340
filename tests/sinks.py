"""Error sinks for reading trace files in tests."""

from __future__ import annotations

from traces import TraceFormatError


def raising_sink(error: TraceFormatError) -> None:
    """Fail on the first violation (the conformance data has none)."""
    raise error
