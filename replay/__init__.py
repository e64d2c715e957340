"""replay: stream shard turns closed-loop to an OpenAI-compatible endpoint and measure them."""

from __future__ import annotations

from typing import Any

from .config import RunConfig
from .errors import ReplayError

#: Loaded on first use: the run machinery pulls in pyarrow, httpx and rich, which the simulator
#: child process and the worker processes should not pay for at start-up.
_LAZY = {
    "Point": ".pareto",
    "Record": ".records",
    "StreamClient": ".client",
    "StreamResult": ".client",
    "build_report": ".report",
    "frontier": ".pareto",
    "read_records": ".records",
    "run_replay": ".run",
    "run_sweep": ".sweep",
    "write_results": ".summary",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(["ReplayError", "RunConfig", *_LAZY])
