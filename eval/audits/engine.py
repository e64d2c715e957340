"""The same-model audit (docs/audits.md): every performance point and every SWE-bench run of a
submission must have measured one and the same served model, on one engine build with one chat
template, as each recorded it before it began (`replay.engine.probe_engine`: run.json's `engine`,
the SWE-bench summary's `engine`).

A point or a run that recorded no identity fails: it cannot show it matches the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replay import EngineIdentity, RunInfo

from ..swebench import SwebenchSummary
from .model import AuditResult

#: What must match, in the order a difference is told.
FIELDS = ("model", "engine", "version", "chat_template_sha256")


def _key(model: str | None, e: EngineIdentity) -> dict[str, str | None]:
    return {"model": model, "engine": e.engine, "version": e.version, "chat_template_sha256": e.chat_template_sha256}


def swebench_identity(summary: SwebenchSummary) -> tuple[str | None, EngineIdentity | None, str | None]:
    """(the model the SWE-bench run requested, its engine identity, why it has none)."""
    if summary.engine is None:
        return (
            summary.model,
            None,
            "records no engine identity (written by a trajbench before it); rerun it with this one",
        )
    return summary.model, summary.engine, None


def same_model(
    points: Sequence[tuple[str, RunInfo]], swebench: Sequence[tuple[str, SwebenchSummary | str]]
) -> AuditResult:
    """`swebench` holds each SWE-bench folder's summary, or why it could not be read."""
    keys: dict[str, dict[str, str | None]] = {}
    missing: list[str] = []
    for point, info in points:
        if info.engine is None:
            missing.append(f"{point}: run.json records no engine identity; rerun the point with this trajbench")
        else:
            keys[point] = _key(info.model, info.engine)
    for folder, summary in swebench:
        if isinstance(summary, str):
            missing.append(f"{folder}: {summary}")
            continue
        model, identity, why = swebench_identity(summary)
        if identity is None:
            missing.append(f"{folder}: {why}")
        else:
            keys[folder] = _key(model, identity)
    figures: dict[str, Any] = {"identities": keys, "points": len(points), "swebench_runs": len(swebench)}
    differ = [f for f in FIELDS if len({k[f] for k in keys.values()}) > 1]
    problems = list(missing)
    for f in differ:
        seen: dict[str | None, list[str]] = {}
        for where, k in keys.items():
            seen.setdefault(k[f], []).append(where)
        told = "; ".join(
            f"{value or 'none'} ({', '.join(where[:3])}{' …' if len(where) > 3 else ''})"
            for value, where in seen.items()
        )
        problems.append(f"{f} differs: {told}")
    if problems:
        reason = "; ".join(problems) + ": a submission measures one model on one engine (docs/audits.md)"
        return AuditResult("same-model", "submission", False, reason, figures)
    if not keys:
        return AuditResult("same-model", "submission", False, "no point or SWE-bench run to compare", figures)
    k = next(iter(keys.values()))
    said = ", ".join(f"{f} {k[f] if k[f] is not None else 'not served'}" for f in FIELDS)
    return AuditResult(
        "same-model",
        "submission",
        True,
        f"{len(points)} point(s) and {len(swebench)} SWE-bench run(s) agree: {said}",
        figures,
    )
