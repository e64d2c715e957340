"""The output-consistency audit (docs/audits.md): a server that answers short is faster, so the
answers themselves are checked, from the records' own output (never from an error kind, so an
answer with `choices: []` counts as empty whichever kind the run gave it):

- *empty*: no content, no reasoning, no tool call;
- *first token*: a non-empty answer of one output token (server usage, else the client's count),
  an answer cut right after its first token;
- *length*: `finish_reason: length`, an answer stopped at the output cap.

Each share of the answered turns (an HTTP 200 whose stream was not cut by the transport) must
stay within the profile's limit (`output_consistency` in the profile, else the defaults,
`traces.DEFAULT_OUTPUT_CONSISTENCY`).
"""

from __future__ import annotations

from collections.abc import Iterable

from replay import Record

from .model import SHOWN, AuditResult, OffendingTurn

#: Error kinds of a turn the transport cut or never got (docs/closed-loop.md): not an answer to judge.
NOT_ANSWERED = frozenset(
    {
        "http",
        "stream",
        "error_object",
        "malformed",
        "timeout",
        "connect",
        "reset",
        "too_large",
        "aborted",
        "cancelled",
        "worker-lost",
    }
)
KINDS = ("empty", "first_token", "length")


def answered(r: Record) -> bool:
    return r.http_status == 200 and r.error_kind not in NOT_ANSWERED


def is_empty(r: Record) -> bool:
    return not (r.content or r.reasoning or r.tool_calls)


def kinds_of(r: Record) -> list[str]:
    """What the audit counts of one answered turn."""
    out = []
    if is_empty(r):
        out.append("empty")
    elif r.output_tokens() == 1:
        out.append("first_token")
    if r.finish_reason == "length":
        out.append("length")
    return out


def output_consistency(point: str, records: Iterable[Record], limits: dict[str, float], profile: str) -> AuditResult:
    turns = [r for r in records if answered(r)]
    found: dict[str, list[OffendingTurn]] = {k: [] for k in KINDS}
    for r in sorted(turns, key=lambda r: (r.instance_id, r.turn)):
        for kind in kinds_of(r):
            found[kind].append(OffendingTurn(r.instance_id, r.turn, kind))
    n = len(turns)
    shares = {k: round(len(found[k]) / n, 6) if n else 0.0 for k in KINDS}
    figures = {
        "answered_turns": n,
        "uncounted_turns": sum(1 for r in turns if not is_empty(r) and r.output_tokens() is None),
        **{f"{k}_turns": len(found[k]) for k in KINDS},
        **{f"{k}_share": shares[k] for k in KINDS},
        "limits": dict(limits),
        "profile": profile,
    }
    if not n:
        return AuditResult("output-consistency", point, False, "no answered turn to judge", figures)
    over = [k for k in KINDS if shares[k] > limits[k]]
    said = ", ".join(f"{k.replace('_', ' ')} {shares[k]:.2%} (limit {limits[k]:.2%})" for k in KINDS)
    if over:
        offending = [o for k in over for o in found[k]][:SHOWN]
        reason = (
            f"of {n} answered turns: {said}; over the limit: {', '.join(k.replace('_', ' ') for k in over)} "
            f"(e.g. {offending[0].instance_id} turn {offending[0].turn}): answers cut short or left empty "
            "(docs/audits.md)"
        )
        return AuditResult("output-consistency", point, False, reason, figures, offending)
    return AuditResult("output-consistency", point, True, f"of {n} answered turns: {said}", figures)
