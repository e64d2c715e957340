"""One verdict of the compliance check (docs/compliance.md): which point, which check, whether it
passed, and a reason a submitter can act on (the file and the number when it failed). Its own
module so every module of checks (compliance, verification, audits) shares it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    point: str
    check: str
    passed: bool
    reason: str
