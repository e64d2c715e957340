"""The embedded simulated endpoint: an OpenAI-compatible server on loopback, no GPU needed.

`serve(config, host, port)` runs it in this process (`trajbench serve-sim`); `start_simulator`
runs it as a child process and yields its base URL (replay without `--endpoint`, tests). The
server half (aiohttp) loads on first use, so a run's configuration can hold a `SimConfig`
without importing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import (
    FAULT_KINDS,
    FINGERPRINT,
    OPTIONS,
    SIM_HEADER,
    SimConfig,
    SimConfigError,
    config_from_args,
    config_from_options,
    config_to_args,
    describe,
    embedded_config,
)

if TYPE_CHECKING:
    from .embedded import SimHandle, SimulatorStartError, start_simulator
    from .faults import FAULT_HEADER
    from .metrics import parse_metrics
    from .server import TIMESTAMPS_HEADER, Simulator, serve

_LAZY = {
    "FAULT_HEADER": ".faults",
    "SimHandle": ".embedded",
    "Simulator": ".server",
    "SimulatorStartError": ".embedded",
    "TIMESTAMPS_HEADER": ".server",
    "parse_metrics": ".metrics",
    "serve": ".server",
    "start_simulator": ".embedded",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FAULT_HEADER",
    "FAULT_KINDS",
    "FINGERPRINT",
    "OPTIONS",
    "SIM_HEADER",
    "TIMESTAMPS_HEADER",
    "SimConfig",
    "SimConfigError",
    "SimHandle",
    "Simulator",
    "SimulatorStartError",
    "config_from_args",
    "config_from_options",
    "config_to_args",
    "describe",
    "embedded_config",
    "parse_metrics",
    "serve",
    "start_simulator",
]
