"""A run's results: the per-turn records (raw facts) and every number made from them (metrics,
the reference's keys, goodput, early stopping, the server usage's cross-check), the files that
hold them (run.json, result_summary.json, seal.json) and their names, and the lock a run holds
on its folder. The record and metric modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .layout import (
    CACHE_ANALYSIS_FILE,
    CACHE_METRICS_FILE,
    CACHE_TURNS_FILE,
    LOCK_FILE,
    RECORDS_FILE,
    REPORT_FILE,
    RUN_FILE,
    SEAL_FILE,
    SUMMARY_FILE,
    SWEEP_FILE,
)
from .slo import Slo, parse_slo

if TYPE_CHECKING:
    from .lock import folder_lock, lock_holder, refuse_if_in_use
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
    from .seal import ChangedFile, Seal, SealCheck, SealedFile, amend_seal, read_seal, verify_seal, write_seal
    from .summary import ResultSummary, RunOutcome, summarize_run, write_results
    from .sweepplan import SweepPlan, SweepPoint
    from .usage import FlaggedTurn, UsageCheck, cross_check

_LAZY = {
    "ChangedFile": ".seal",
    "DatasetRef": ".runinfo",
    "EMBEDDED_EVIDENCE": ".runinfo",
    "FlaggedTurn": ".usage",
    "Preflight": ".runinfo",
    "RayRun": ".runinfo",
    "RayWorkerInfo": ".runinfo",
    "Record": ".records",
    "RecordWriter": ".records",
    "ResultSummary": ".summary",
    "RunInfo": ".runinfo",
    "RunNumbers": ".numbers",
    "RunOutcome": ".summary",
    "Seal": ".seal",
    "SealCheck": ".seal",
    "SealedFile": ".seal",
    "ShardCheck": ".runinfo",
    "SweepPlan": ".sweepplan",
    "SweepPoint": ".sweepplan",
    "UsageCheck": ".usage",
    "amend_seal": ".seal",
    "compress_records": ".records",
    "cross_check": ".usage",
    "folder_lock": ".lock",
    "lock_holder": ".lock",
    "read_records": ".records",
    "read_run_info": ".runinfo",
    "read_seal": ".seal",
    "records_path": ".records",
    "refuse_if_in_use": ".lock",
    "summarize_run": ".summary",
    "verify_seal": ".seal",
    "write_results": ".summary",
    "write_seal": ".seal",
}
__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "CACHE_ANALYSIS_FILE",
    "CACHE_METRICS_FILE",
    "CACHE_TURNS_FILE",
    "EMBEDDED_EVIDENCE",
    "LOCK_FILE",
    "RECORDS_FILE",
    "REPORT_FILE",
    "RUN_FILE",
    "SEAL_FILE",
    "SUMMARY_FILE",
    "SWEEP_FILE",
    "ChangedFile",
    "DatasetRef",
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
