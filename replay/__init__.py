"""replay: stream shard turns closed-loop to an OpenAI-compatible endpoint and measure them.

The front door of the package: every other package imports what it needs of replay from here
(or from `replay.sim`, `replay.calibrate`). Most names load on first use: the run machinery
pulls in pyarrow, httpx and rich, which the simulator child process and the worker processes
should not pay for at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .client import ResponseLimits
from .config import BACKENDS, DEFAULT_HEADERS, RunConfig
from .errors import AllTurnsFailed, Interrupted, ReplayError
from .results import RECORDS_FILE, REPORT_FILE, RUN_FILE, SUMMARY_FILE, SWEEP_FILE, Slo, parse_slo

if TYPE_CHECKING:
    from .client import StreamClient, StreamResult, event_loop, run_loop
    from .engine import TemplateParity, check_template, default_template_tokenizer, render_parity
    from .options import OptionsFile, check_run_dataset, options_of_run, read_options_file
    from .report import (
        Gates,
        GatesOf,
        Point,
        PointSet,
        build_report,
        collect_points,
        describe_regions,
        frontier,
        region_concurrencies,
    )
    from .results import (
        Record,
        ResultSummary,
        RunInfo,
        RunNumbers,
        RunOutcome,
        SweepPlan,
        build_summary,
        read_records,
        read_run_info,
        records_path,
        write_results,
    )
    from .run import run_replay
    from .sweep import parse_concurrencies, run_sweep

_LAZY = {
    "Gates": ".report",
    "GatesOf": ".report",
    "OptionsFile": ".options",
    "Point": ".report",
    "PointSet": ".report",
    "Record": ".results",
    "ResultSummary": ".results",
    "RunInfo": ".results",
    "RunNumbers": ".results",
    "RunOutcome": ".results",
    "StreamClient": ".client",
    "StreamResult": ".client",
    "SweepPlan": ".results",
    "TemplateParity": ".engine",
    "build_report": ".report",
    "build_summary": ".results",
    "check_run_dataset": ".options",
    "check_template": ".engine",
    "collect_points": ".report",
    "default_template_tokenizer": ".engine",
    "describe_regions": ".report",
    "event_loop": ".client",
    "frontier": ".report",
    "options_of_run": ".options",
    "parse_concurrencies": ".sweep",
    "read_options_file": ".options",
    "read_records": ".results",
    "read_run_info": ".results",
    "records_path": ".results",
    "region_concurrencies": ".report",
    "render_parity": ".engine",
    "run_loop": ".client",
    "run_replay": ".run",
    "run_sweep": ".sweep",
    "write_results": ".results",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


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
    "PointSet",
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
    "build_summary",
    "check_run_dataset",
    "check_template",
    "collect_points",
    "default_template_tokenizer",
    "describe_regions",
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
