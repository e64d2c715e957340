"""Inline accuracy (SPEC §9.2) of a replay run, from its records and shards; writes scores.json.

Every issued client turn is paired with the recorded assistant row after it (its ground truth)
and scored by `eval.rules`: workflow turns by intent code, coding turns by bash-action multiset
intersection over union. The score is the plain mean over scored turns of all repeats, tail
included, rounded to 4 decimals; the same mean over the performance-window turns sits beside it.

Which turns are in the denominator (our reading of SPEC §7 and §9.2):
- every turn the run issued (one record each) whose recorded answer has ground truth;
- a turn whose request failed (any error kind) is issued with no output: it scores 0;
- an instance that a failed turn aborted (SPEC §7: "the rest of that trajectory instance is
  aborted … counted as failed and as 0 in inline accuracy") also contributes its later, never-
  sent turns, each scoring 0 (`turns.aborted_unsent`): replay records them with error kind
  `aborted`, and a record log without them (an older or foreign writer) gets them added from
  the shards. The reference scorer counts only sent turns, so on a run with failures our score
  can be lower; with no failures both agree. `turns.issued` counts the turns actually sent.
- an instance the run stopped issuing (`stop_issuing_on_first_user_complete`) or a run that was
  interrupted (error kind `cancelled`) does not add its never-sent turns: they were not aborted
  by a failure (`turns.not_issued` counts them).
- a turn without ground truth (no answer, no intent codes, no recognised bash action in the
  recording) is excluded and listed once in `excluded_turns` with the reason.
`turns.expected` = scorable turns in the denominator, `observed` = those with an output,
`missing` = expected − observed, `scored` = expected (missing ones score 0).
"""

from __future__ import annotations

import orjson
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import traces
from replay.records import Record

from .errors import EvalError
from .rules import Rules, action_score, intent_score, load_rules, message_actions, model_intent
from .rundir import GroundTruth, Run, Truth, open_run

SCORES_FILE = "scores.json"
TOP_MISMATCHES = 10

READING = (
    "denominator: issued turns with ground truth of all repeats (tail included) plus the never-sent "
    "turns of instances aborted by a failed turn; failed or aborted turns score 0"
)


@dataclass(frozen=True)
class _Turn:
    """One turn in the denominator: a record, or a never-sent turn of an aborted instance."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turn: int
    in_window: bool
    record: Record | None  # None: aborted before it was sent

    @property
    def status(self) -> str:
        if self.record is None:
            return "aborted"
        return self.record.error_kind or "ok"

    @property
    def sent(self) -> bool:
        return self.status != "aborted"


def score_run(run_dir: str | Path, *, shards: str | Path | None = None, rules: str | Path | None = None, write: bool = True) -> dict[str, Any]:
    """Score a run folder; writes `scores.json` into it unless `write` is False."""
    run = open_run(run_dir, shards)
    result = score(run, load_rules(rules))
    if write:
        path = run.path / SCORES_FILE
        if path.is_file():  # keep what others merged in (eval.swebench adds a "swebench" entry)
            try:
                old = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError:
                old = {}
            if isinstance(old, dict):
                result = {**{k: v for k, v in old.items() if k not in result}, **result}
        # orjson: several times faster than json on the per_turn list of a 60k-turn run
        path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    return result


def score(run: Run, rules: Rules) -> dict[str, Any]:
    gt = run.truth(rules)
    records = run.records()
    turns, not_issued = _denominator(records, gt, run)
    per_turn: list[dict[str, Any]] = []
    excluded: dict[tuple[str, int], dict[str, Any]] = {}
    mismatches: dict[str, Counter[tuple[str, str]]] = {"coding": Counter(), "workflow": Counter()}
    missing_by_status: Counter[str] = Counter()
    for t in turns:
        truth = gt.get(t.trajectory_id, t.turn, f"{run.path}/records.jsonl")
        reason = truth.exclude_reason
        if reason is not None:
            entry = excluded.setdefault((t.trajectory_id, t.turn), {
                "conversation_id": t.trajectory_id, "turn": t.turn, "assistant_turn": truth.assistant_turn,
                "domain": truth.domain, "exclude_reason": reason, "issued": 0,
            })
            entry["issued"] += 1
            continue
        row = _score_turn(t, truth, rules)
        per_turn.append(row)
        if row.get("missing"):
            missing_by_status[t.status] += 1
        if row["_v"] < 1.0:
            mismatches[truth.domain][_mismatch_key(row, t)] += 1
    per_turn.sort(key=lambda r: (r["conversation_id"], r["repeat"], r["turn"]))
    observed = sum(1 for r in per_turn if not r.get("missing"))
    result: dict[str, Any] = {
        "score": _mean(r["_v"] for r in per_turn),
        "turns": {
            "issued": sum(1 for t in turns if t.sent),
            "expected": len(per_turn),
            "observed": observed,
            "missing": len(per_turn) - observed,
            "scored": len(per_turn),
            "aborted_unsent": sum(1 for t in turns if not t.sent),
            "not_issued": not_issued,
            "missing_by_status": dict(sorted(missing_by_status.items())),
        },
        "domains": _domains(per_turn),
        "window": {
            "score": _mean(r["_v"] for r in per_turn if r["in_window"]),
            "scored": sum(1 for r in per_turn if r["in_window"]),
            "domains": _domains([r for r in per_turn if r["in_window"]]),
        },
        **_gate(run.profile_name, _mean(r["_v"] for r in per_turn)),
        "mismatches": {d: _top(c) for d, c in mismatches.items() if c},
        "rules": rules.describe(),
        "reading": READING,
        "dataset": {"shards": str(run.shards.path), "content_hash": run.shards.content_hash},
        "per_turn": [{k: v for k, v in r.items() if k != "_v"} for r in per_turn],
        "excluded_turns": sorted(excluded.values(), key=lambda e: (e["conversation_id"], e["turn"])),
    }
    return result


def _denominator(records: list[Record], gt: GroundTruth, run: Run) -> tuple[list[_Turn], int]:
    """The records as turns, plus the never-sent turns of failure-aborted instances; also the
    number of turns of started instances that were never sent for another reason."""
    by_instance: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_instance[r.instance_id].append(r)
    out: list[_Turn] = []
    not_issued = 0
    for iid, recs in by_instance.items():
        first = recs[0]
        all_turns = gt.turns.get(first.trajectory_id)
        if all_turns is None:
            raise EvalError(
                f"{run.path}/records.jsonl: trajectory {first.trajectory_id} (instance {iid}) is not in the "
                f"shards {run.shards.path}; pass the shards the run replayed (--shards)"
            )
        for r in recs:
            out.append(_Turn(r.instance_id, r.trajectory_id, r.repeat, r.turn, r.in_window, r))
        sent = {r.turn for r in recs}
        unsent = [t for t in all_turns if t not in sent]
        if any(not r.ok and r.error_kind != "cancelled" for r in recs):
            out.extend(_Turn(iid, first.trajectory_id, first.repeat, t, False, None) for t in unsent)
        else:
            not_issued += len(unsent)
    return out, not_issued


def _score_turn(t: _Turn, truth: Truth, rules: Rules) -> dict[str, Any]:
    rec = t.record if t.record is not None and t.record.ok else None
    row: dict[str, Any] = {
        "conversation_id": t.trajectory_id,
        "repeat": t.repeat,
        "turn": t.turn,
        "assistant_turn": truth.assistant_turn,
        "domain": truth.domain,
        "in_window": t.in_window,
        "status": t.status,
    }
    if rec is None:
        row["missing"] = True
    if truth.domain == "workflow":
        intent = model_intent(rec.reasoning, rec.content, rules) if rec else None
        row["gt_intents"] = list(truth.intents)
        row["model_intent"] = intent
        value = intent_score(intent, truth.intents)
    else:
        actions = message_actions(rec.tool_calls, rules) if rec else []
        row["gt_actions"] = list(truth.actions)
        row["model_actions"] = actions
        value = action_score(actions, truth.actions) or 0.0
    row["score"] = round(value, 4)
    row["_v"] = value  # the mean uses unrounded values; dropped before writing
    return row


def _mismatch_key(row: dict[str, Any], t: _Turn) -> tuple[str, str]:
    if row["domain"] == "workflow":
        expected = "|".join(row["gt_intents"])
        produced = row["model_intent"] or "(no intent)"
    else:
        expected = " ".join(sorted(row["gt_actions"]))
        produced = " ".join(sorted(row["model_actions"])) or "(no action)"
    if row.get("missing"):
        produced = f"(no output: {t.status})"
    return expected, produced


def _top(counter: Counter[tuple[str, str]]) -> list[dict[str, Any]]:
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_MISMATCHES]
    return [{"expected": e, "produced": p, "count": n} for (e, p), n in items]


def _mean(values: Any) -> float | None:
    vals = list(values)
    return round(sum(vals) / len(vals), 4) if vals else None


def _domains(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for domain in ("coding", "workflow"):
        vals = [r["_v"] for r in rows if r["domain"] == domain]
        if vals:
            out[domain] = {"score": _mean(vals), "scored": len(vals)}
    return out


def _gate(name: str | None, s: float | None) -> dict[str, Any]:
    """The profile's inline threshold and whether the whole-run score meets it."""
    threshold = traces.get_profile(name).thresholds.inline if name in traces.profiles() else None
    passed = None if threshold is None or s is None else s >= threshold
    return {"profile": name, "threshold": threshold, "passed": passed}


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A short human summary of a scores dict (what `eval inline` prints)."""
    t = result["turns"]
    w = result["window"]
    lines = [
        f"inline score {_fmt(result['score'])} over {t['scored']} turns "
        f"({t['observed']} with output, {t['missing']} missing, {len(result['excluded_turns'])} turn(s) excluded)",
        f"window score {_fmt(w['score'])} over {w['scored']} turns",
    ]
    for d, v in result["domains"].items():
        lines.append(f"  {d}: {_fmt(v['score'])} over {v['scored']} turns")
    if result["threshold"] is not None:
        verdict = "PASS" if result["passed"] else "FAIL"
        lines.append(f"{verdict}: {result['profile']} needs >= {result['threshold']:.4f}")
    for d, items in result["mismatches"].items():
        lines.append(f"most frequent {d} mismatches (expected -> produced):")
        lines.extend(f"  {m['count']:>6}  {m['expected']} -> {m['produced']}" for m in items[:5])
    return lines


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"
