"""A run's results: the per-turn records (raw facts) and every number made from them (metrics,
the reference's keys, goodput, early stopping), the files that hold them (run.json,
result_summary.json) and their names. The record and metric modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .layout import (
    CACHE_ANALYSIS_FILE,
    CACHE_METRICS_FILE,
    CACHE_TURNS_FILE,
    RECORDS_FILE,
    REPORT_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    SWEEP_FILE,
)
from .slo import Slo, parse_slo

if TYPE_CHECKING:
    from .numbers import RunNumbers
    from .records import (
        FAILED_KINDS,
        PARTIAL_KINDS,
        Record,
        RecordWriter,
        compress_records,
        read_records,
        records_path,
    )
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
    from .summary import ResultSummary, RunOutcome, write_results
    from .sweepplan import SweepPlan, SweepPoint

_LAZY = {
    "DatasetRef": ".runinfo",
    "EMBEDDED_EVIDENCE": ".runinfo",
    "FAILED_KINDS": ".records",
    "PARTIAL_KINDS": ".records",
    "Preflight": ".runinfo",
    "RayRun": ".runinfo",
    "RayWorkerInfo": ".runinfo",
    "Record": ".records",
    "RecordWriter": ".records",
    "ResultSummary": ".summary",
    "RunInfo": ".runinfo",
    "RunNumbers": ".numbers",
    "RunOutcome": ".summary",
    "ShardCheck": ".runinfo",
    "SweepPlan": ".sweepplan",
    "SweepPoint": ".sweepplan",
    "compress_records": ".records",
    "read_records": ".records",
    "read_run_info": ".runinfo",
    "records_path": ".records",
    "write_results": ".summary",
}
__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "CACHE_ANALYSIS_FILE",
    "CACHE_METRICS_FILE",
    "CACHE_TURNS_FILE",
    "EMBEDDED_EVIDENCE",
    "FAILED_KINDS",
    "PARTIAL_KINDS",
    "RECORDS_FILE",
    "REPORT_FILE",
    "RUN_FILE",
    "SUMMARY_FILE",
    "SWEEP_FILE",
    "DatasetRef",
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
    "compress_records",
    "parse_slo",
    "read_records",
    "read_run_info",
    "records_path",
    "write_results",
]
