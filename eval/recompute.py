"""Recompute a run folder's stored numbers from its raw records and compare (docs/compliance.md).

`result_summary.json`, `scores.json` and `osl.json` are derived files: each is remade here with
the very functions that wrote it (`replay.summarize_run`, `eval.inline.score`, `eval.osl.osl_of`),
from the records and the shards, so the stored file and its recomputation can differ only when
one of them was edited. What the records cannot say is taken from the stored summary and checked
where the records allow: how the run ended (interrupted, crashed), the sockets it opened, and the
time the performance window closed, which must agree with every sent record's window flag.

The comparison is key by key on the JSON as written, numbers within a relative 1e-9 (JSON keeps
floats exactly; the tolerance only absorbs their last digit). Not compared: `version` (the
trajbench that wrote the summary), `scores.json`'s `dataset.shards` (where the shards were, not
what they hold) and keys other tools merged into `scores.json` (`swebench`). Every difference
names the file, the key, the stored and the recomputed value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import traces
from replay import SUMMARY_FILE, ReplayError, ResultSummary, summarize_run

from .errors import EvalError
from .inline import score
from .layout import OSL_FILE, SCORES_FILE
from .osl import osl_of
from .plan import ShardPlan, shard_plan
from .results import OslResult, Scores
from .rules import default_rules
from .rundir import Run, open_run

#: Relative tolerance of a number's comparison: JSON round-tripping, nothing more.
REL_TOL = 1e-9
#: Differences kept per file (all are counted).
KEEP = 50

#: Keys (as paths) never compared, per file, and why: see the module docstring.
_SKIP: dict[str, frozenset[tuple[str, ...]]] = {
    SUMMARY_FILE: frozenset({("version",)}),
    SCORES_FILE: frozenset({("dataset", "shards")}),
    OSL_FILE: frozenset(),
}
#: Records whose send time is not a send (never judged by the window's close).
_UNSENT = ("aborted", "worker-lost")


class Note(str):
    """A description standing where a value would be (a key absent from one side, the bounds the
    records put on a value), shown as it is."""


ABSENT = Note("(absent)")


@dataclass(frozen=True)
class Difference:
    """One key whose stored value is not what the records give."""

    file: str
    key: str
    stored: Any
    recomputed: Any

    def describe(self) -> str:
        stored, recomputed = _shown(self.stored, self.recomputed)
        return f"{self.file}: {self.key} stored {stored}, recomputed {recomputed}"


@dataclass(frozen=True)
class Recomputation:
    """The files compared (each with its number of differences), the first differences of each,
    and the files that could not be compared, with why."""

    compared: dict[str, int] = field(default_factory=dict)
    differences: tuple[Difference, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems and not any(self.compared.values())

    def reason(self, limit: int = 4) -> str:
        if self.ok:
            return f"{', '.join(self.compared) or 'no derived file'}: each equal to its recomputation from the records"
        parts = list(self.problems)
        shown = [d.describe() for d in self.differences[:limit]]
        total = sum(self.compared.values())
        if shown:
            more = f" (and {total - len(shown)} more difference(s))" if total > len(shown) else ""
            parts.append("; ".join(shown) + more)
        return "; ".join(parts)


def recompute(
    run: Run,
    *,
    plan: ShardPlan | None = None,
    scores: Scores | None = None,
    osl: OslResult | None = None,
) -> Recomputation:
    """Recompute every derived file the run folder holds and compare it with the stored one.
    `scores` and `osl` are results already computed with the official gates and default rules
    (the compliance check's), reused when the stored file was judged the same way."""
    compared: dict[str, int] = {}
    diffs: list[Difference] = []
    problems: list[str] = []
    remakes: list[tuple[str, Callable[[], tuple[Any, list[Difference]]]]] = [
        (SUMMARY_FILE, lambda: _summary(run, plan)),
        (SCORES_FILE, lambda: _scores(run, scores)),
        (OSL_FILE, lambda: _osl(run, osl)),
    ]
    for name, remake in remakes:
        path = run.path / name
        if not path.is_file():
            if name == SUMMARY_FILE:
                problems.append(f"{path}: missing, so nothing of the run's numbers can be verified")
            continue
        try:
            stored = orjson.loads(path.read_bytes())
            fresh, extra = remake()
        except (orjson.JSONDecodeError, OSError) as exc:
            problems.append(f"{path}: unreadable ({exc})")
            continue
        except traces.ContractError as exc:
            problems.append(f"unreadable: {exc}")
            continue
        except (traces.TraceError, ReplayError, EvalError) as exc:
            problems.append(f"{path}: cannot be recomputed here ({exc})")
            continue
        found = list(_compare(name, stored, fresh, (), ignore_extra=name == SCORES_FILE)) + extra
        compared[name] = len(found)
        diffs += found[:KEEP]
    return Recomputation(compared, tuple(diffs), tuple(problems))


def _as_written(doc: traces.JsonFile) -> Any:
    return orjson.loads(doc.text())


def _summary(run: Run, plan: ShardPlan | None) -> tuple[Any, list[Difference]]:
    stored = ResultSummary.read(run.path)
    ours = stored.trajbench
    plan = plan if plan is not None else shard_plan(run.shards)
    fresh = summarize_run(
        run.path,
        window_close_ns=ours.window.close_ns,
        interrupted=ours.interrupted,
        crashed=ours.crashed,
        connections=ours.connections,
        trajectory_turns={i.trajectory_id: len(i.turns) for i in plan.instances},
    )
    return _as_written(fresh), _window_close(run, ours.window.close_ns)


def _window_close(run: Run, close_ns: int | None) -> list[Difference]:
    """The stored close against the records' window flags: after every send judged in, at or
    before every send judged out (a window that never closed judged every send in)."""
    sent = [r for r in run.all_records() if r.error_kind not in _UNSENT]
    ins = [r.t_send_ns for r in sent if r.in_window]
    outs = [r.t_send_ns for r in sent if not r.in_window]
    lo = max(ins) + 1 if ins else None
    hi = min(outs) if outs else None
    key = "trajbench.window.close_ns"
    if close_ns is None:
        if outs:
            why = Note(f"a close at or before {hi} ({len(outs)} send(s) out of the window)")
            return [Difference(SUMMARY_FILE, key, None, why)]
        return []
    if (lo is not None and close_ns < lo) or (hi is not None and close_ns > hi):
        bounds = f"between {lo if lo is not None else '-'} and {hi if hi is not None else '-'}"
        return [Difference(SUMMARY_FILE, key, close_ns, Note(f"{bounds} (the records' window flags)"))]
    return []


def _scores(run: Run, given: Scores | None) -> tuple[Any, list[Difference]]:
    stored = Scores.read(run.path)
    rules = default_rules()
    mode = stored.gates.mode
    if given is not None and given.gates.mode == mode and given.profile == run.profile_name:
        return _as_written(given), []
    return _as_written(score(run, rules, gates=mode)), []


def _osl(run: Run, given: OslResult | None) -> tuple[Any, list[Difference]]:
    stored = OslResult.read(run.path)
    mode = stored.gates.mode
    recounted = stored.method == "client-tokenizer" and stored.tokenizer not in (
        None,
        "the run's",
        run.config.tokenizer,
    )
    spec = stored.tokenizer if recounted else None
    if given is not None and spec is None and given.gates.mode == mode and given.profile == stored.profile:
        return _as_written(given), []
    return _as_written(osl_of(run, stored.profile, tokenizer=spec, gates=mode)), []


def _compare(
    name: str, stored: Any, fresh: Any, at: tuple[str, ...], *, ignore_extra: bool = False
) -> Iterator[Difference]:
    if at in _SKIP[name]:
        return
    if isinstance(stored, dict) and isinstance(fresh, dict):
        for k in fresh:
            if k not in stored:
                yield Difference(name, _key((*at, k)), ABSENT, fresh[k])
            else:
                yield from _compare(name, stored[k], fresh[k], (*at, k))
        if not ignore_extra:
            for k in stored:
                if k not in fresh and (*at, k) not in _SKIP[name]:
                    yield Difference(name, _key((*at, k)), stored[k], ABSENT)
        return
    if isinstance(stored, list) and isinstance(fresh, list):
        if len(stored) != len(fresh):
            yield Difference(name, _key(at) + " (length)", len(stored), len(fresh))
        for k, (a, b) in enumerate(zip(stored, fresh, strict=False)):
            yield from _compare(name, a, b, (*at, f"[{k}]"))
        return
    if not _equal(stored, fresh):
        yield Difference(name, _key(at), stored, fresh)


def _equal(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, numbers) and isinstance(b, numbers)):
        return bool(a == b and type(a) is type(b))
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def _key(at: tuple[str, ...]) -> str:
    out = ""
    for part in at:
        if part.startswith("["):
            out += part
        elif "." in part or " " in part:
            out += f'["{part}"]'
        else:
            out += f".{part}" if out else part
    return out or "(the file)"


def _shown(a: Any, b: Any) -> tuple[str, str]:
    """Both values, short; numbers to 6 significant digits unless that hides their difference."""

    def text(v: Any, digits: int | None) -> str:
        if isinstance(v, float) and digits is not None:
            return f"{v:.{digits}g}"
        if isinstance(v, Note):
            return str(v)
        shown = json.dumps(v)
        return shown if len(shown) <= 80 else shown[:77] + "…"

    short = text(a, 6), text(b, 6)
    return short if short[0] != short[1] else (text(a, None), text(b, None))


def recompute_dir(run_dir: str | Path) -> Recomputation:
    """`recompute` of a run folder by its path (the shards named in its run.json)."""
    return recompute(open_run(run_dir))
