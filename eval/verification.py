"""The verification checks of a run folder (docs/compliance.md): what a run folder claims is
never taken on trust.

- `seal`: every file as `replay run` (and the commands after it) sealed it (`replay.verify_seal`);
- `complete`: the run ended by itself (not interrupted, not crashed, its summary written) and
  its records hold every turn the shards plan for it, once (`completeness`);
- `recomputed`: result_summary.json, scores.json and osl.json equal their recomputation from the
  records (`eval.recompute`);
- `failure-budget`: window turns that did not end ok (failed, aborted, partial, cancelled,
  worker-lost) within the budget the point states (`--failure-budget`, default 0);
- `client-tokens`: output tokens counted by the client tokenizer on every answered turn, and the
  server's usage cross-checked against that count (`replay.cross_check`).

Each typed result (`SealCheck`, `Completeness`, `BudgetUse`, `UsageCheck`, `Recomputation`) is
a verdict of its own; `verification_checks` turns them into `Check` lines that name the file and
the number (`trajbench review` gets them through `eval check`'s compliance lines).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from replay import SUMMARY_FILE, RunOutcome, UsageCheck, cross_check, records_path, verify_seal

from .checks import Check
from .plan import ShardPlan
from .recompute import recompute
from .results import OslResult, Scores
from .rundir import Run

#: Instances and turn numbers a `complete` line names before it says "and N more".
_SHOW = 4


@dataclass(frozen=True)
class Completeness:
    """Did the run issue (or account for) every turn its plan holds, once, and end by itself?
    `missing` maps each planned instance to its turns without a record."""

    summary: str  # result_summary.json: "written" (the run ended, however), "missing" or "unreadable"
    interrupted: bool
    crashed: bool
    planned: int  # client turns the shards plan for run.json's num_trajectories
    claimed_planned: int  # run.json's planned_turns
    recorded: int  # planned turns with a record
    missing: dict[str, tuple[int, ...]] = field(default_factory=dict)
    duplicates: int = 0  # records beyond the first of one (instance, turn)
    unplanned: int = 0  # records of a turn the plan does not hold

    @property
    def complete(self) -> bool:
        return (
            self.summary == "written"
            and not self.interrupted
            and not self.crashed
            and not self.missing
            and not self.duplicates
            and not self.unplanned
        )

    def reason(self, records: str, summary: str) -> str:
        if self.complete:
            return f"{self.recorded} of {self.planned} planned turns recorded once each; the run ended by itself"
        parts = []
        if self.summary == "missing":
            parts.append(f"{summary}: missing (the run was killed, or is still running)")
        elif self.summary != "written":
            parts.append(f"{summary}: unreadable, so how the run ended is unknown")
        elif self.interrupted:
            parts.append(f"{summary}: state interrupted (Ctrl-C or SIGTERM stopped issuing)")
        elif self.crashed:
            parts.append(f"{summary}: the run crashed")
        if self.missing:
            parts.append(
                f"{records}: {self.recorded} of {self.planned} planned turns recorded; without a record: "
                + _missing_text(self.missing)
            )
        if self.duplicates:
            parts.append(f"{records}: {self.duplicates} turn(s) recorded more than once (two runs wrote one folder?)")
        if self.unplanned:
            parts.append(f"{records}: {self.unplanned} record(s) of turns the shards do not plan for this run")
        if self.claimed_planned != self.planned:
            parts.append(f"run.json planned_turns {self.claimed_planned}, the shards plan {self.planned}")
        return "; ".join(parts)


def _missing_text(missing: dict[str, tuple[int, ...]]) -> str:
    shown = []
    for iid, turns in list(missing.items())[:_SHOW]:
        nums = ", ".join(map(str, turns[:8])) + (", …" if len(turns) > 8 else "")
        shown.append(f"{iid} turn(s) {nums} ({len(turns)})")
    more = f" and {len(missing) - _SHOW} more instance(s)" if len(missing) > _SHOW else ""
    return "; ".join(shown) + more


def completeness(run: Run, plan: ShardPlan) -> Completeness:
    """The run's records against the plan its shards give for run.json's num_trajectories."""
    outcome = RunOutcome.read(run.path)
    seen: Counter[tuple[str, int]] = Counter((r.instance_id, r.turn) for r in run.all_records())
    planned: set[tuple[str, int]] = set()
    missing: dict[str, tuple[int, ...]] = {}
    for p in plan.planned(run.config.num_trajectories):
        keys = [(p.instance_id, t) for t in p.turns]
        planned.update(keys)
        absent = tuple(t for (_, t) in keys if (p.instance_id, t) not in seen)
        if absent:
            missing[p.instance_id] = absent
    state = "written" if outcome.finished else "unreadable" if (run.path / SUMMARY_FILE).is_file() else "missing"
    return Completeness(
        summary=state,
        interrupted=outcome.interrupted,
        crashed=outcome.crashed,
        planned=len(planned),
        claimed_planned=run.config.planned_turns,
        recorded=sum(1 for k in planned if k in seen),
        missing=missing,
        duplicates=sum(n - 1 for n in seen.values() if n > 1),
        unplanned=sum(n for k, n in seen.items() if k not in planned),
    )


@dataclass(frozen=True)
class BudgetUse:
    """Window turns that did not end ok, by kind, against the point's failure budget."""

    budget: int
    window_turns: int
    not_ok: dict[str, int]

    @property
    def used(self) -> int:
        return sum(self.not_ok.values())

    @property
    def within(self) -> bool:
        return self.used <= self.budget

    def reason(self, records: str) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in self.not_ok.items())
        counted = f"{records}: {self.used} of {self.window_turns} window turns did not end ok" + (
            f" ({kinds})" if kinds else ""
        )
        if self.within:
            return f"{counted}; budget {self.budget} (run.json failure_budget)"
        return (
            f"{counted} > budget {self.budget} (run.json failure_budget, --failure-budget); an official point "
            "states the failures it allows: fix the endpoint and rerun, or rerun with a larger --failure-budget"
        )


def failure_budget_use(run: Run) -> BudgetUse:
    """Every window record that is not ok (`Record.ok`), by error kind."""
    window = [r for r in run.all_records() if r.in_window]
    kinds = Counter(r.error_kind or "?" for r in window if not r.ok)
    return BudgetUse(run.config.failure_budget, len(window), dict(sorted(kinds.items())))


def client_tokens_check(run: Run, point: str) -> Check:
    """Official points count output tokens with the client tokenizer (the reference's method),
    and the server's usage agrees with that count (replay.results.usage, docs/metrics.md)."""
    records = records_path(run.path).name
    if run.config.tokenizer is None:
        return Check(
            point,
            "client-tokens",
            False,
            "run.json tokenizer is null: the output tokens were not counted by the client; official points count "
            "them with the model's tokenizer as the reference does (rerun with --tokenizer NAME[:PATH])",
        )
    usage = cross_check(run.records())
    problems = []
    if usage.client_counted < usage.turns:
        problems.append(
            f"{records}: {usage.turns - usage.client_counted} of {usage.turns} answered turns have no client count "
            "(client_output_tokens)"
        )
    if usage.impossible:
        kinds = ", ".join(f"{k} {n}" for k, n in usage.flags.items() if k in usage.impossible_flags)
        if "absurd" in usage.flags:
            kinds += f"; absurd: more tokens than the answer's characters + {usage.absurd_margin}"
        problems.append(
            f"{records}: server usage that cannot be true on {usage.impossible} turn(s) ({kinds}), "
            f"e.g. {_examples(usage, usage.impossible_flags)}"
        )
    diff = usage.mean_difference
    if diff is not None and abs(diff) > usage.mean_share:
        problems.append(
            f"{records}: mean server usage {usage.server_mean:.1f} vs client count {usage.client_mean:.1f} "
            f"({100 * diff:+.1f} %, limit ±{100 * usage.mean_share:g} %) over {usage.both} turns"
        )
    summary = _usage_summary(run.config.tokenizer, usage)
    if problems:
        return Check(point, "client-tokens", False, "; ".join(problems) + f" ({summary})")
    return Check(point, "client-tokens", True, summary)


def _usage_summary(tokenizer: str, u: UsageCheck) -> str:
    diff = u.mean_difference
    mean = (
        f"mean usage {u.server_mean:.1f} vs client {u.client_mean:.1f} ({100 * diff:+.1f} %, limit ±{100 * u.mean_share:g} %)"
        if diff is not None
        else "no turn with both counts"
    )
    off = u.flags.get("off", 0)
    flagged = (
        f"; {off} turn(s) off by more than max({u.off_tokens} tokens, {100 * u.off_share:g} %), e.g. {_examples(u, ('off',))}"
        if off
        else ""
    )
    return (
        f"client tokenizer {tokenizer} counted {u.client_counted} of {u.turns} answered turns; "
        f"server usage on {u.server_counted}, {mean}{flagged}"
    )


def _examples(u: UsageCheck, flags: tuple[str, ...]) -> str:
    return "; ".join(t.describe() for t in u.examples if t.flag in flags)


def verification_checks(
    run: Run,
    point: str,
    plan: ShardPlan | None,
    *,
    scores: Scores | None = None,
    osl: OslResult | None = None,
) -> list[Check]:
    """The five verification checks of one run folder. Without a `plan` (shards that do not
    match their manifest) the checks that need the shards say so and fail."""
    records = records_path(run.path).name
    seal = verify_seal(run.path)
    out = [Check(point, "seal", seal.intact, seal.reason())]
    if plan is None:
        out += [
            Check(point, name, False, "not judged: the shards do not match their manifest (see the dataset check)")
            for name in ("complete", "recomputed")
        ]
    else:
        done = completeness(run, plan)
        out.append(Check(point, "complete", done.complete, done.reason(records, SUMMARY_FILE)))
        again = recompute(run, plan=plan, scores=scores, osl=osl)
        out.append(Check(point, "recomputed", again.ok, again.reason()))
    budget = failure_budget_use(run)
    out.append(Check(point, "failure-budget", budget.within, budget.reason(records)))
    out.append(client_tokens_check(run, point))
    return out
