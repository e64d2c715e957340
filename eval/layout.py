"""The file names eval writes into a run folder: spelled here and nowhere else."""

from __future__ import annotations

SCORES_FILE = "scores.json"
OSL_FILE = "osl.json"
SWEBENCH_SUMMARY_FILE = "swebench_summary.json"
