"""The embedded simulated endpoint: an OpenAI-compatible server on loopback, no GPU needed.

`serve(config, host, port)` runs it in this process (`trajbench serve-sim`); `start_simulator`
runs it as a child process and yields its base URL (replay without `--endpoint`, tests).
"""

from __future__ import annotations

from .config import FAULT_KINDS, FINGERPRINT, OPTIONS, SIM_HEADER, SimConfig, SimConfigError, config_from_options, config_to_args
from .embedded import SimHandle, SimulatorStartError, start_simulator
from .faults import FAULT_HEADER
from .metrics import parse_metrics
from .server import TIMESTAMPS_HEADER, Simulator, serve

__all__ = sorted(
    [
        "FAULT_HEADER",
        "FAULT_KINDS",
        "FINGERPRINT",
        "OPTIONS",
        "SIM_HEADER",
        "SimConfig",
        "SimConfigError",
        "SimHandle",
        "Simulator",
        "SimulatorStartError",
        "TIMESTAMPS_HEADER",
        "config_from_options",
        "config_to_args",
        "parse_metrics",
        "serve",
        "start_simulator",
    ]
)
