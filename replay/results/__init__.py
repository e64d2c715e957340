"""A run's results: the per-turn records (raw facts) and every number made from them (metrics,
the reference's keys, goodput, early stopping), the files that hold them (run.json,
result_summary.json) and their names. The record and metric modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .engineinfo import CacheFlush, EngineIdentity
from .layout import (
    CACHE_ANALYSIS_FILE,
    CACHE_METRICS_FILE,
    CACHE_TURNS_FILE,
    RECORDS_FILE,
    REPORT_FILE,
    REPORT_PAGE,
    RUN_FILE,
    SUMMARY_FILE,
    SWEEP_FILE,
)
from .slo import Slo, parse_slo

if TYPE_CHECKING:
    from .numbers import RunNumbers
    from .records import Record, RecordWriter, compress_records, read_records, records_path
    from .runinfo import (
        EMBEDDED_EVIDENCE,
        DatasetRef,
        Preflight,
        RayRun,
        RayWorkerInfo,
        RunInfo,
        ShardCheck,
        read_run_info,
    )
    from .summary import ResultSummary, RunOutcome, build_summary, write_results
    from .sweepplan import SweepPlan, SweepPoint


__all__ = [
    "CACHE_ANALYSIS_FILE",
    "CACHE_METRICS_FILE",
    "CACHE_TURNS_FILE",
    "EMBEDDED_EVIDENCE",
    "RECORDS_FILE",
    "REPORT_FILE",
    "REPORT_PAGE",
    "RUN_FILE",
    "SUMMARY_FILE",
    "SWEEP_FILE",
    "CacheFlush",
    "DatasetRef",
    "EngineIdentity",
    "Preflight",
    "RayRun",
    "RayWorkerInfo",
    "Record",
    "RecordWriter",
    "ResultSummary",
    "RunInfo",
    "RunNumbers",
    "RunOutcome",
    "ShardCheck",
    "Slo",
    "SweepPlan",
    "SweepPoint",
    "build_summary",
    "compress_records",
    "parse_slo",
    "read_records",
    "read_run_info",
    "records_path",
    "write_results",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".numbers": ("RunNumbers",),
    ".records": ("Record", "RecordWriter", "compress_records", "read_records", "records_path"),
    ".runinfo": (
        "DatasetRef",
        "EMBEDDED_EVIDENCE",
        "Preflight",
        "RayRun",
        "RayWorkerInfo",
        "RunInfo",
        "ShardCheck",
        "read_run_info",
    ),
    ".summary": ("ResultSummary", "RunOutcome", "build_summary", "write_results"),
    ".sweepplan": ("SweepPlan", "SweepPoint"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
