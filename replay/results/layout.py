"""The file names of a run folder, a sweep folder and a report folder: spelled here and nowhere else."""

from __future__ import annotations

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"
SUMMARY_FILE = "performance/result_summary.json"  # where the reference's readers look
REPORT_FILE = "report.txt"  # a run's report (`replay run` prints it)
REPORT_PAGE = "report.html"  # `trajbench report`'s page, in its --out folder
SWEEP_FILE = "sweep.json"
RECORDS_ZST_FILE = "records.jsonl.zst"  # records.jsonl once the run has ended (docs/files.md)
CACHE_METRICS_FILE = "cache_metrics.json"  # the endpoint's prefix-cache counters before/after
CACHE_ANALYSIS_FILE = "cache_analysis.json"  # `trajbench analyze cache` (docs/cache.md)
CACHE_TURNS_FILE = "cache_turns.parquet"  # its per-turn rows
SEAL_FILE = "seal.json"  # each file's sha256 and size, written when the run ends (docs/files.md)
LOCK_FILE = ".trajbench.lock"  # held while a run or a sweep writes the folder; never sealed
