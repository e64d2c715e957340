"""A replay run folder as the eval package reads it: run.json, records and the ground truth.

Ground truth is taken from the shards the run replayed (no extra inference): for every client
turn, the recorded assistant row after it, reduced by the scoring rules to what a score needs
(bash actions or intent codes) plus the expected output tokens. Every repeat of a trajectory
shares the same ground truth, so one instance per source id is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import traces
from replay import SUMMARY_FILE, Record, ReplayError, RunInfo, RunOutcome, read_records, read_run_info

from .errors import EvalError
from .rules import Rules, default_rules, intent_score, message_actions, model_intent


@dataclass(frozen=True)
class Truth:
    """What one client turn is scored against."""

    trajectory_id: str
    turn: int
    assistant_turn: int | None
    domain: str
    actions: tuple[str, ...]
    intents: tuple[str, ...]
    expected_osl_tokens: int | None
    #: the recorded answer's own score under the rules (what a perfect model scores here);
    #: below 1 on a workflow answer that states no intent (`eval.gates`, dataset mode)
    recorded_score: float = 1.0

    @property
    def exclude_reason(self) -> str | None:
        if self.assistant_turn is None:
            return "no recorded answer (the trajectory ends on this client turn)"
        if self.domain == "workflow" and not self.intents:
            return "no ground truth (the recorded answer has no intent_codes)"
        if self.domain == "coding" and not self.actions:
            return "no ground truth (the recorded answer has no recognised bash action)"
        return None


@dataclass(frozen=True)
class GroundTruth:
    truths: dict[tuple[str, int], Truth]
    turns: dict[str, tuple[int, ...]]  # client turn numbers of each source id, in order

    def get(self, trajectory_id: str, turn: int, where: str) -> Truth:
        try:
            return self.truths[(trajectory_id, turn)]
        except KeyError:
            raise EvalError(
                f"{where}: trajectory {trajectory_id} turn {turn} is not in the shards; "
                "pass the shards the run replayed (--shards)"
            ) from None


@dataclass(frozen=True)
class Run:
    path: Path
    config: RunInfo
    shards: traces.Shards

    @property
    def profile_name(self) -> str:
        return self.config.profile

    @property
    def profile(self) -> traces.Profile | None:
        """The run's model profile: this trajbench's of that name (built-in, or a loaded user
        profile), else the one run.json records in full (a user profile whose file is not
        loaded here), else None."""
        known = traces.profiles().get(self.config.profile)
        if known is not None:
            return known
        content = self.config.profile_content
        if content is None or content.get("name") != self.config.profile:
            return None
        spec = {k: v for k, v in content.items() if k != "name"}
        if traces.check_profile(self.config.profile, spec):
            return None  # an edited run.json: not a profile to judge by
        return traces.profile_from(content, source=f"{self.path}/run.json")

    def truth(self, rules: Rules | None = None) -> GroundTruth:
        """The ground truth of the run's shards (computed once for the default rules)."""
        if rules is None or rules is default_rules():
            return self._default_truth
        return ground_truth(self.shards, rules)

    @cached_property
    def _default_truth(self) -> GroundTruth:
        return ground_truth(self.shards)

    def records(self) -> list[Record]:
        """The run's records, one per (instance, turn); a repeated key keeps the successful one."""
        return list(self._records)

    def all_records(self) -> list[Record]:
        """Every record as written, a repeated (instance, turn) included (what the run's own
        summary was made from, and what tells two runs merged into one folder)."""
        return list(self._all_records)

    @cached_property
    def _all_records(self) -> tuple[Record, ...]:
        try:
            return tuple(read_records(self.path))
        except ReplayError as exc:
            raise EvalError(str(exc)) from None

    @cached_property
    def _records(self) -> tuple[Record, ...]:
        out: dict[tuple[str, int], Record] = {}
        for r in self._all_records:
            key = (r.instance_id, r.turn)
            if key not in out or (r.ok and not out[key].ok):
                out[key] = r
        return tuple(out.values())


def open_run(run_dir: str | Path, shards: str | Path | None = None) -> Run:
    """Open a run folder; `shards` overrides the folder named in run.json."""
    path = Path(run_dir)
    try:
        config = read_run_info(path)
    except ReplayError as exc:
        raise EvalError(str(exc)) from None
    return Run(path, config, traces.Shards(_shards_path(path, config, shards)))


def partial_run(run_dir: str | Path) -> str | None:
    """Why the run in `run_dir` did not run every planned turn, or None when it did.

    Scores of such a run cover only the turns that ran (an interrupted run has fewer scored
    turns, not a lower score), so `eval inline` and `eval osl` warn before they score it."""
    path = Path(run_dir)
    if not RunInfo.exists(path):
        return None  # not a run folder at all: scoring says so
    outcome = RunOutcome.read(path)
    if not outcome.finished:
        why = f"it has no {SUMMARY_FILE} (it crashed, was killed, or is still running)"
    elif outcome.interrupted:
        why = "it was interrupted (Ctrl-C or SIGTERM) and stopped issuing early"
    elif outcome.crashed:
        why = "it crashed before it finished"
    else:
        try:
            config = read_run_info(path)
            if config.stop_at_window_end:
                return None  # a run meant to stop at the window's end
            planned = config.planned_turns
            ran = len({(r.instance_id, r.turn) for r in read_records(path)})
        except ReplayError:
            return None  # scoring reports the unreadable file itself
        if ran >= planned:
            return None
        why = f"it records {ran} of its {planned} planned turns"
    return f"{path} is a partial run: {why}; its scores cover only the turns that ran (rerun it for a complete score)"


def _shards_path(run_dir: Path, config: RunInfo, override: str | Path | None) -> Path:
    if override is not None:
        return Path(override)
    named = config.shards
    if not named:
        raise EvalError(f"{run_dir}/run.json names no shards folder; pass --shards PATH")
    p = Path(named)
    # run.json may hold a path relative to where replay ran, or to the run folder
    for cand in (p, run_dir / p):
        if (cand / traces.MANIFEST).is_file():
            return cand
    raise EvalError(f"{run_dir}/run.json names shards {named!r}, which is not a shard folder here; pass --shards PATH")


def ground_truth(shards: traces.Shards, rules: Rules | None = None) -> GroundTruth:
    r = rules or default_rules()
    seen: set[str] = set()
    truths: dict[tuple[str, int], Truth] = {}
    turns: dict[str, tuple[int, ...]] = {}
    for k, entry in enumerate(shards.index):
        tid = entry.trajectory_id
        if tid in seen:
            continue
        seen.add(tid)
        inst = shards.instance(k)
        domain = r.domain(tid)
        for row in inst.turns:
            exp = row.expected
            intents = tuple(sorted({c.upper() for c in row.intent_codes or ()})) if domain == "workflow" else ()
            truths[(tid, row.turn)] = Truth(
                trajectory_id=tid,
                turn=row.turn,
                assistant_turn=None if exp is None else int(exp["turn"]),
                domain=domain,
                actions=tuple(message_actions(exp.get("tool_calls"), r)) if exp and domain == "coding" else (),
                intents=intents,
                expected_osl_tokens=row.expected_osl_tokens,
                # a coding answer scores 1 against its own actions; an intent must be stated
                recorded_score=intent_score(model_intent(exp.get("reasoning_content"), exp.get("content"), r), intents)
                if exp and domain == "workflow"
                else 1.0,
            )
        turns[tid] = tuple(row.turn for row in inst.turns)
    return GroundTruth(truths, turns)
