"""Inline accuracy of a replay run, from its records and shards; writes scores.json (docs/accuracy.md).

Every issued client turn is paired with the recorded assistant row after it (its ground truth)
and scored by `eval.rules`: workflow turns by intent code, coding turns by bash-action multiset
intersection over union. The score is the plain mean over scored turns of all repeats, tail
included, rounded to 4 decimals; the same mean over the performance-window turns sits beside it.

The denominator is the reference scorer's:
- every turn the run issued whose recorded answer has ground truth, tail included;
- a turn that failed (`replay.Record.failed`: no response, a status other than 200, a timeout,
  …) was issued with no output: it scores 0;
- a partial turn (`replay.Record.partial`: the response started but broke, or carried an error
  object or a malformed line, or nothing at all) is scored on what arrived, as the reference
  scores it (an empty one scores 0 but counts as observed);
- the later turns of an instance that a failed turn aborted were issued too: the reference
  client registers each as an issued sample that failed, so they also score 0 (replay records
  them with error kind `aborted`; a record log without them, from an older or foreign writer,
  gets them added from the shards);
- turns never sent because issuing stopped (`stop_issuing_on_first_user_complete`, an interrupt
  cancelling a turn in flight) are not in it (`turns.not_issued` counts them).

`scores.json` keeps the reference's shape and numbering: `turns.issued` counts issued turns that
have a recorded answer (sent or aborted), `per_turn[].turn` and `excluded_turns[].turn` are the
assistant row's turn number, `excluded_turns` lists every answer of the dataset with no ground
truth. trajbench's additions (the client turn, window flag and status of each scored turn; the
window score; the verdict; the commonest mismatches) sit beside them under their own names.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import traces
from replay import Record, amend_seal, records_path

from .errors import EvalError
from .gates import MODE_NAMES, check_mode, inline_bar
from .layout import SCORES_FILE
from .results import DomainScore, Mismatch, Scores, TurnTotals, WindowScore
from .rules import Rules, action_score, intent_score, load_rules, message_actions, model_intent
from .rundir import GroundTruth, Run, Truth, open_run

TOP_MISMATCHES = 10

READING = (
    "denominator (the reference scorer's): issued turns with ground truth of all repeats, tail included, "
    "the turns a failure aborted counting as issued; failed or aborted turns score 0, partial ones "
    "are scored on what arrived"
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


def score_run(
    run_dir: str | Path | Run,
    *,
    shards: str | Path | None = None,
    rules: str | Path | None = None,
    gates: str = "official",
    write: bool = True,
    progress: traces.Progress | None = None,
) -> Scores:
    """Score a run folder against the threshold of `gates` (docs/accuracy.md); writes
    `scores.json` into it unless `write` is False. `progress` counts the turns scored. A `Run`
    (`open_run`) shares its records and ground truth with the other gates given it (`osl_gate`)."""
    check_mode(gates)
    run = run_dir if isinstance(run_dir, Run) else open_run(run_dir, shards)
    result = score(run, load_rules(rules), progress, gates=gates)
    if write:
        result.write(run.path)
        amend_seal(run.path, [SCORES_FILE], "eval inline")  # a sealed folder stays sealed (docs/files.md)
    return result


def score(run: Run, rules: Rules, progress: traces.Progress | None = None, *, gates: str = "official") -> Scores:
    gt = run.truth(rules)
    records = run.records()
    turns, not_issued = _denominator(records, gt, run)
    if progress is not None:
        progress.set_total(len(turns))
    per_turn: list[dict[str, Any]] = []
    mismatches: dict[str, Counter[tuple[str, str]]] = {"coding": Counter(), "workflow": Counter()}
    missing_by_status: Counter[str] = Counter()
    issued = no_answer = 0
    where = str(records_path(run.path))  # named by an error only; looked up once, not per turn
    for t in turns:
        if progress is not None:
            progress.advance()
        truth = gt.get(t.trajectory_id, t.turn, where)
        if truth.assistant_turn is None:  # the trajectory ends on this turn: nothing to score against
            no_answer += 1
            continue
        issued += 1
        if truth.exclude_reason is not None:
            continue
        row = _score_turn(t, truth, rules)
        row["_perfect"] = truth.recorded_score
        per_turn.append(row)
        if row.get("missing"):
            missing_by_status[t.status] += 1
        if row["_v"] < 1.0:
            mismatches[truth.domain][_mismatch_key(row, t)] += 1
    per_turn.sort(key=lambda r: (r["conversation_id"], r["repeat"], r["client_turn"]))
    observed = sum(1 for r in per_turn if not r.get("missing"))
    whole = _mean(r["_v"] for r in per_turn)
    threshold, basis = inline_bar(gates, run.profile, _mean(r["_perfect"] for r in per_turn))
    return Scores(
        score=whole,
        turns=TurnTotals(
            issued=issued,
            expected=len(per_turn),
            observed=observed,
            missing=len(per_turn) - observed,
            scored=len(per_turn),
            sent=sum(1 for t in turns if t.sent),
            aborted_unsent=sum(1 for t in turns if not t.sent),
            without_answer=no_answer,
            not_issued=not_issued,
            missing_by_status=dict(sorted(missing_by_status.items())),
        ),
        domains=_domains(per_turn),
        per_turn=[{k: v for k, v in r.items() if k not in ("_v", "_perfect")} for r in per_turn],
        excluded_turns=_excluded(gt),
        window=WindowScore(
            score=_mean(r["_v"] for r in per_turn if r["in_window"]),
            scored=sum(1 for r in per_turn if r["in_window"]),
            domains=_domains([r for r in per_turn if r["in_window"]]),
        ),
        profile=run.profile_name,
        threshold=threshold,
        passed=None if threshold is None or whole is None else whole >= threshold,
        mismatches={d: _top(c) for d, c in mismatches.items() if c},
        rules=rules.describe(),
        reading=READING,
        dataset={"shards": str(run.shards.path), "content_hash": run.shards.content_hash},
        gates=basis,
    )


def _excluded(gt: GroundTruth) -> list[dict[str, Any]]:
    """Every recorded answer of the dataset without ground truth, once (the reference's list)."""
    out = [
        {
            "conversation_id": t.trajectory_id,
            "turn": t.assistant_turn,
            "domain": t.domain,
            "exclude_reason": "no ground truth",
            "why": t.exclude_reason,
            "client_turn": t.turn,
        }
        for t in gt.truths.values()
        if t.assistant_turn is not None and t.exclude_reason is not None
    ]
    return sorted(out, key=lambda e: (e["conversation_id"], e["client_turn"]))


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
                f"{records_path(run.path)}: trajectory {first.trajectory_id} (instance {iid}) is not in the "
                f"shards {run.shards.path}; pass the shards the run replayed (--shards)"
            )
        for r in recs:
            out.append(_Turn(r.instance_id, r.trajectory_id, r.repeat, r.turn, r.in_window, r))
        sent = {r.turn for r in recs}
        unsent = [t for t in all_turns if t not in sent]
        if any(r.failed and r.error_kind != "cancelled" for r in recs):
            out.extend(_Turn(iid, first.trajectory_id, first.repeat, t, False, None) for t in unsent)
        else:
            not_issued += len(unsent)
    return out, not_issued


def _score_turn(t: _Turn, truth: Truth, rules: Rules) -> dict[str, Any]:
    rec = t.record if t.record is not None and not t.record.failed else None  # partial: scored on what arrived
    row: dict[str, Any] = {
        "conversation_id": t.trajectory_id,
        "repeat": t.repeat,
        "turn": truth.assistant_turn,
        "domain": truth.domain,
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
    row.update(client_turn=t.turn, in_window=t.in_window, status=t.status)
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


def _top(counter: Counter[tuple[str, str]]) -> list[Mismatch]:
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_MISMATCHES]
    return [Mismatch(e, p, n) for (e, p), n in items]


def _mean(values: Any) -> float | None:
    vals = list(values)
    return round(sum(vals) / len(vals), 4) if vals else None


def _domains(rows: list[dict[str, Any]]) -> dict[str, DomainScore]:
    out: dict[str, DomainScore] = {}
    for domain in ("coding", "workflow"):
        vals = [r["_v"] for r in rows if r["domain"] == domain]
        if vals:
            out[domain] = DomainScore(_mean(vals), len(vals))
    return out


def summary_lines(result: Scores) -> list[str]:
    """A short human summary of the scores (what `eval inline` prints)."""
    t = result.turns
    w = result.window
    lines = [
        f"inline score {_fmt(result.score)} over {t.scored:,} turns "
        f"({t.observed:,} with output, {t.missing:,} missing, {len(result.excluded_turns):,} turn(s) excluded)",
        f"window score {_fmt(w.score)} over {w.scored:,} turns",
    ]
    for d, v in result.domains.items():
        lines.append(f"  {d}: {_fmt(v.score)} over {v.scored:,} turns")
    g = result.gates
    if result.threshold is not None:
        verdict = "PASS" if result.passed else "FAIL"
        bar = f"{result.profile} needs" if g.official else f"research gate ({MODE_NAMES[g.mode]}) needs"
        lines.append(f"{verdict}: {bar} >= {result.threshold:.4f}")
    if not g.official or result.threshold is None:
        lines.append(f"gates: {g.how}")
    for d, items in result.mismatches.items():
        lines.append(f"most frequent {d} mismatches (expected -> produced):")
        lines.extend(f"  {m.count:>6}  {m.expected} -> {m.produced}" for m in items[:5])
    return lines


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"
