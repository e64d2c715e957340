"""The embedded simulated endpoint: an OpenAI-compatible server on loopback, no GPU needed.

`serve(config, host, port)` runs it in this process (`trajbench serve-sim`); `start_simulator`
runs it as a child process and yields its base URL (replay without `--endpoint`, tests). The
server half (aiohttp) loads on first use, so a run's configuration can hold a `SimConfig`
without importing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .config import (
    FAST_STEP_MODEL,
    FAULT_KINDS,
    FINGERPRINT,
    GAMES,
    OPTIONS,
    PREFLIGHT_HEADER,
    SIM_HEADER,
    SimConfig,
    SimConfigError,
    config_from_args,
    config_from_options,
    config_to_args,
    describe,
    embedded_config,
    standalone_config,
)
from .errors import SimError
from .tokens import ASSISTANT_HEADER, CHARS_PER_TOKEN, render_answer, render_message, render_prompt

if TYPE_CHECKING:
    from .embedded import SimHandle, SimulatorStartError, start_simulator
    from .faults import FAULT_HEADER
    from .metrics import parse_metrics
    from .server import TIMESTAMPS_HEADER, Simulator, serve


__all__ = [
    "ASSISTANT_HEADER",
    "CHARS_PER_TOKEN",
    "FAST_STEP_MODEL",
    "FAULT_HEADER",
    "FAULT_KINDS",
    "FINGERPRINT",
    "GAMES",
    "OPTIONS",
    "PREFLIGHT_HEADER",
    "SIM_HEADER",
    "TIMESTAMPS_HEADER",
    "SimConfig",
    "SimConfigError",
    "SimError",
    "SimHandle",
    "Simulator",
    "SimulatorStartError",
    "config_from_args",
    "config_from_options",
    "config_to_args",
    "describe",
    "embedded_config",
    "parse_metrics",
    "render_answer",
    "render_message",
    "render_prompt",
    "serve",
    "standalone_config",
    "start_simulator",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".embedded": ("SimHandle", "SimulatorStartError", "start_simulator"),
    ".faults": ("FAULT_HEADER",),
    ".metrics": ("parse_metrics",),
    ".server": ("Simulator", "TIMESTAMPS_HEADER", "serve"),
}

__getattr__ = lazy_getattr(__name__, _LAZY)
