"""What an agentic audit finds (docs/audits.md): its name, whether it passed, the figures it
judged, the turns that broke its rule, and the rule in words."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: The audits, in the order they run and print.
AUDITS = ("cache-exploit", "warm-cache", "output-consistency", "same-model")

#: Each audit's rule, as docs/audits.md states it (kept beside the figures in `--json`).
RULES = {
    "cache-exploit": "no turn has more cached tokens than its ideal reusable prefix (analyze cache, docs/cache.md) "
    "+ one block + the difference between the server's and the client's count of its prompt",
    "warm-cache": "no first turn of an instance has more cached tokens than its cross-instance share + one block + "
    "the count difference, and, unless the run reset the cache first (--flush-cache), the engine's prefix-cache "
    "counters showed no cache hit before the run",
    "output-consistency": "of the answered turns, the shares that are empty (no text, reasoning or tool call), that "
    "end at their first token (one output token), and that stop at the output cap (finish_reason length) are each "
    "at most the profile's limit",
    "same-model": "every point and every SWE-bench run records an engine identity, and all of them name the same "
    "model, engine, engine version and chat-template hash",
}

#: Offending turns kept in a result (all of them are counted in its figures).
SHOWN = 50


@dataclass(frozen=True)
class OffendingTurn:
    """One turn that broke an audit's rule: what was measured and the most its rule allows
    (`what` names the measure: "cached", "empty", "first_token", "length")."""

    instance_id: str
    turn: int
    what: str
    value: int | None = None
    limit: int | None = None


@dataclass(frozen=True)
class AuditResult:
    """One audit of one point (a run folder as given), or of the whole submission (`same-model`)."""

    audit: str
    point: str
    passed: bool
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)
    offending: list[OffendingTurn] = field(default_factory=list)  # the first `SHOWN`, in (instance, turn) order

    @property
    def rule(self) -> str:
        return RULES[self.audit]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "rule": self.rule}


def audit_json(results: list[AuditResult]) -> dict[str, Any]:
    """The machine-readable form (`trajbench audit --json`)."""
    return {
        "passed": all(r.passed for r in results),
        "failed": sum(not r.passed for r in results),
        "audits": [r.to_json() for r in results],
    }


def could_not_run(audit: str, point: str, why: str) -> AuditResult:
    """An audit that could not judge: it fails (an audit that cannot see never passes) and says why."""
    return AuditResult(audit, point, False, f"could not run: {why}")
