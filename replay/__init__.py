"""replay: stream shard turns closed-loop to an OpenAI-compatible endpoint and measure them.

The front door of the package: every other package imports what it needs of replay from here
(or from `replay.sim`, `replay.calibrate`). Most names load on first use: the run machinery
pulls in pyarrow, httpx and rich, which the simulator child process and the worker processes
should not pay for at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import BACKENDS, DEFAULT_HEADERS, ResponseLimits, RunConfig
from .errors import AllTurnsFailed, Interrupted, ReplayError
from .layout import RECORDS_FILE, REPORT_FILE, RUN_FILE, SUMMARY_FILE, SWEEP_FILE
from .slo import Slo, parse_slo

if TYPE_CHECKING:
    from .client import StreamClient, StreamResult
    from .loops import event_loop, run_loop
    from .numbers import RunNumbers
    from .optionsfile import OptionsFile, check_run_dataset, options_of_run, read_options_file
    from .pareto import Point, frontier, region_concurrencies
    from .points import Gates, GatesOf
    from .records import Record, read_records, records_path
    from .report import build_report
    from .run import run_replay
    from .runinfo import RunInfo, read_run_info
    from .summary import ResultSummary, RunOutcome, write_results
    from .sweep import SweepPlan, parse_concurrencies, run_sweep
    from .template_parity import TemplateParity, check_template, default_template_tokenizer, render_parity

_LAZY = {
    "Gates": ".points",
    "GatesOf": ".points",
    "OptionsFile": ".optionsfile",
    "Point": ".pareto",
    "Record": ".records",
    "ResultSummary": ".summary",
    "RunInfo": ".runinfo",
    "RunNumbers": ".numbers",
    "RunOutcome": ".summary",
    "StreamClient": ".client",
    "StreamResult": ".client",
    "SweepPlan": ".sweep",
    "TemplateParity": ".template_parity",
    "build_report": ".report",
    "check_run_dataset": ".optionsfile",
    "check_template": ".template_parity",
    "default_template_tokenizer": ".template_parity",
    "event_loop": ".loops",
    "frontier": ".pareto",
    "options_of_run": ".optionsfile",
    "parse_concurrencies": ".sweep",
    "read_options_file": ".optionsfile",
    "read_records": ".records",
    "records_path": ".records",
    "read_run_info": ".runinfo",
    "region_concurrencies": ".pareto",
    "render_parity": ".template_parity",
    "run_loop": ".loops",
    "run_replay": ".run",
    "run_sweep": ".sweep",
    "write_results": ".summary",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BACKENDS",
    "DEFAULT_HEADERS",
    "RECORDS_FILE",
    "REPORT_FILE",
    "RUN_FILE",
    "SUMMARY_FILE",
    "SWEEP_FILE",
    "AllTurnsFailed",
    "Gates",
    "GatesOf",
    "Interrupted",
    "OptionsFile",
    "Point",
    "Record",
    "ReplayError",
    "ResponseLimits",
    "ResultSummary",
    "RunConfig",
    "RunInfo",
    "RunNumbers",
    "RunOutcome",
    "Slo",
    "StreamClient",
    "StreamResult",
    "SweepPlan",
    "TemplateParity",
    "build_report",
    "check_run_dataset",
    "check_template",
    "default_template_tokenizer",
    "event_loop",
    "frontier",
    "options_of_run",
    "parse_concurrencies",
    "parse_slo",
    "read_options_file",
    "read_records",
    "read_run_info",
    "records_path",
    "region_concurrencies",
    "render_parity",
    "run_loop",
    "run_replay",
    "run_sweep",
    "write_results",
]
