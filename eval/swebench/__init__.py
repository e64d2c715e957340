"""SWE-bench Verified standalone accuracy (docs/accuracy.md) with the field's own tools: mini-swe-agent
runs the agent, the swebench harness grades. Both come from the optional extra
`trajbench[swebench]` and are imported only when a run starts, so this package (and `eval`)
imports without them.
"""

from __future__ import annotations

from ..layout import SWEBENCH_SUMMARY_FILE as SUMMARY_FILE
from .dataset import load_instances
from .errors import SwebenchError
from .progress import Reporter, RichReporter
from .run import RUNTIMES, SwebenchOptions, run_swebench
from .summary import REGION_RUNS, MeanResult, Provenance, SwebenchScore, SwebenchSummary, read_summary, swebench_mean
from .templates import TEMPLATES

__all__ = [
    "REGION_RUNS",
    "RUNTIMES",
    "SUMMARY_FILE",
    "TEMPLATES",
    "MeanResult",
    "Provenance",
    "Reporter",
    "RichReporter",
    "SwebenchError",
    "SwebenchOptions",
    "SwebenchScore",
    "SwebenchSummary",
    "load_instances",
    "read_summary",
    "run_swebench",
    "swebench_mean",
]
