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
    LOCK_FILE,
    RECORDS_FILE,
    REPORT_FILE,
    REPORT_PAGE,
    RUN_FILE,
    SEAL_FILE,
    SUMMARY_FILE,
    SWEEP_FILE,
)
from .slo import Slo, parse_slo

if TYPE_CHECKING:
    from .lock import folder_lock, lock_holder, refuse_if_in_use
    from .numbers import RunNumbers
    from .records import FAILED_KINDS, PARTIAL_KINDS, Record, RecordWriter, compress_records, read_records, records_path
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
    from .seal import ChangedFile, Seal, SealCheck, SealedFile, amend_seal, read_seal, verify_seal, write_seal
    from .summary import ResultSummary, RunOutcome, build_summary, summarize_run, write_results
    from .sweepplan import SweepPlan, SweepPoint
    from .usage import FlaggedTurn, UsageCheck, cross_check


__all__ = [
    "CACHE_ANALYSIS_FILE",
    "CACHE_METRICS_FILE",
    "CACHE_TURNS_FILE",
    "EMBEDDED_EVIDENCE",
    "FAILED_KINDS",
    "LOCK_FILE",
    "PARTIAL_KINDS",
    "RECORDS_FILE",
    "REPORT_FILE",
    "REPORT_PAGE",
    "RUN_FILE",
    "SEAL_FILE",
    "SUMMARY_FILE",
    "SWEEP_FILE",
    "CacheFlush",
    "ChangedFile",
    "DatasetRef",
    "EngineIdentity",
    "FlaggedTurn",
    "Preflight",
    "RayRun",
    "RayWorkerInfo",
    "Record",
    "RecordWriter",
    "ResultSummary",
    "RunInfo",
    "RunNumbers",
    "RunOutcome",
    "Seal",
    "SealCheck",
    "SealedFile",
    "ShardCheck",
    "Slo",
    "SweepPlan",
    "SweepPoint",
    "UsageCheck",
    "amend_seal",
    "build_summary",
    "compress_records",
    "cross_check",
    "folder_lock",
    "lock_holder",
    "parse_slo",
    "read_records",
    "read_run_info",
    "read_seal",
    "records_path",
    "refuse_if_in_use",
    "summarize_run",
    "verify_seal",
    "write_results",
    "write_seal",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".lock": ("folder_lock", "lock_holder", "refuse_if_in_use"),
    ".numbers": ("RunNumbers",),
    ".records": (
        "FAILED_KINDS",
        "PARTIAL_KINDS",
        "Record",
        "RecordWriter",
        "compress_records",
        "read_records",
        "records_path",
    ),
    ".runinfo": (
        "EMBEDDED_EVIDENCE",
        "DatasetRef",
        "Preflight",
        "RayRun",
        "RayWorkerInfo",
        "RunInfo",
        "ShardCheck",
        "read_run_info",
    ),
    ".seal": ("ChangedFile", "Seal", "SealCheck", "SealedFile", "amend_seal", "read_seal", "verify_seal", "write_seal"),
    ".summary": ("ResultSummary", "RunOutcome", "build_summary", "summarize_run", "write_results"),
    ".sweepplan": ("SweepPlan", "SweepPoint"),
    ".usage": ("FlaggedTurn", "UsageCheck", "cross_check"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
