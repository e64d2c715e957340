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
from .config import BACKENDS, DEFAULT_HEADERS, RUN_OPTIONS, RunConfig, recorded_options, run_config
from .errors import AllTurnsFailed, FolderInUse, Interrupted, ReplayError, UsageProblem
from .results import (
    RECORDS_FILE,
    REPORT_FILE,
    RUN_FILE,
    SEAL_FILE,
    SUMMARY_FILE,
    SWEEP_FILE,
    CacheFlush,
    EngineIdentity,
    Slo,
    parse_slo,
)

if TYPE_CHECKING:
    from .client import StreamClient, StreamResult, event_loop, run_loop
    from .engine import TemplateParity, check_template, default_template_tokenizer, render_parity
    from .loop import Interrupt
    from .options import OptionsFile, check_run_dataset, read_options_file, settle
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
        Seal,
        SealCheck,
        SweepPlan,
        UsageCheck,
        amend_seal,
        build_summary,
        cross_check,
        read_records,
        read_run_info,
        read_seal,
        records_path,
        summarize_run,
        verify_seal,
        write_results,
        write_seal,
    )
    from .run import run_replay
    from .sweep import SWEEP_RUN_OPTIONS, parse_concurrencies, run_sweep, sweep_levels


__all__ = [
    "BACKENDS",
    "DEFAULT_HEADERS",
    "RECORDS_FILE",
    "REPORT_FILE",
    "RUN_FILE",
    "RUN_OPTIONS",
    "SEAL_FILE",
    "SUMMARY_FILE",
    "SWEEP_FILE",
    "SWEEP_RUN_OPTIONS",
    "AllTurnsFailed",
    "CacheFlush",
    "EngineIdentity",
    "FolderInUse",
    "Gates",
    "GatesOf",
    "Interrupt",
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
    "Seal",
    "SealCheck",
    "Slo",
    "StreamClient",
    "StreamResult",
    "SweepPlan",
    "TemplateParity",
    "UsageCheck",
    "UsageProblem",
    "amend_seal",
    "build_report",
    "build_summary",
    "check_run_dataset",
    "check_template",
    "collect_points",
    "cross_check",
    "default_template_tokenizer",
    "describe_regions",
    "event_loop",
    "frontier",
    "parse_concurrencies",
    "parse_slo",
    "read_options_file",
    "read_records",
    "read_run_info",
    "read_seal",
    "recorded_options",
    "records_path",
    "region_concurrencies",
    "render_parity",
    "run_config",
    "run_loop",
    "run_replay",
    "run_sweep",
    "settle",
    "summarize_run",
    "sweep_levels",
    "verify_seal",
    "write_results",
    "write_seal",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".client": ("StreamClient", "StreamResult", "event_loop", "run_loop"),
    ".engine": ("TemplateParity", "check_template", "default_template_tokenizer", "render_parity"),
    ".loop": ("Interrupt",),
    ".options": ("OptionsFile", "check_run_dataset", "read_options_file", "settle"),
    ".report": (
        "Gates",
        "GatesOf",
        "Point",
        "PointSet",
        "build_report",
        "collect_points",
        "describe_regions",
        "frontier",
        "region_concurrencies",
    ),
    ".results": (
        "Record",
        "ResultSummary",
        "RunInfo",
        "RunNumbers",
        "RunOutcome",
        "Seal",
        "SealCheck",
        "SweepPlan",
        "UsageCheck",
        "amend_seal",
        "build_summary",
        "cross_check",
        "read_records",
        "read_run_info",
        "read_seal",
        "records_path",
        "summarize_run",
        "verify_seal",
        "write_results",
        "write_seal",
    ),
    ".run": ("run_replay",),
    ".sweep": ("SWEEP_RUN_OPTIONS", "parse_concurrencies", "run_sweep", "sweep_levels"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
