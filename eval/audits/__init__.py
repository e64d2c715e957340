"""The agentic audits of a run (docs/audits.md), after MLPerf's audit tests but for multi-turn
traffic: cache exploit, warm cache, output consistency and same model. Pure functions over run
folders (`trajbench audit`, and the audit lines of `eval check`); nothing here sends a request.
"""

from __future__ import annotations

from .model import AUDITS, RULES, AuditResult, OffendingTurn, audit_json
from .run import AuditOptions, audit_run, audit_runs, run_folders

__all__ = [
    "AUDITS",
    "RULES",
    "AuditOptions",
    "AuditResult",
    "OffendingTurn",
    "audit_json",
    "audit_run",
    "audit_runs",
    "run_folders",
]
