"""Per-turn lengths and their tables for `traces stats`: ISL, delta, expected OSL, delays, growth.

Lengths come from the shards' token columns, else from a given tokenizer (counted exactly as
`traces build` counts them), else in characters of the canonical request JSON. Percentiles take
an observed value (numpy `method="lower"`, docs/metrics.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..canonical import canonical_json
from ..distribution import distribution
from ..requests import wire_messages
from .statsfile import Delays, DomainStats, GrowthPoint, Number, Summary


@dataclass
class Facts:
    """Per-turn facts gathered in the pass, one list entry per client turn."""

    domain: list[str] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    isl: list[int] = field(default_factory=list)
    delta: list[int] = field(default_factory=list)
    osl: list[int | None] = field(default_factory=list)
    delay: list[float] = field(default_factory=list)
    instances: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))  # domain → turns/instance
    trajectories: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def summarize(values: Sequence[float]) -> Summary:
    """n, mean, p50/p90/p99 (observed values) and max of a sample (`traces.distribution`, in the
    compact form of stats.json); nulls when it is empty."""
    d = distribution(values)
    return Summary(d.n, _r(d.avg), _r(d.p(50)), _r(d.p(90)), _r(d.p(99)), _r(d.max))


def _r(x: float | None, nd: int = 4) -> Number | None:
    if x is None:
        return None
    return int(x) if float(x).is_integer() else round(x, nd)


class TurnLengths:
    """(isl, delta, expected osl) of each turn, fed every `TurnPrompt` of one instance: the
    shards' token columns, else a given tokenizer (counted as the build does), else characters.
    As in the build, turn 1's delta leaves out the system message."""

    def __init__(self, counter: Any | None, columns: bool) -> None:
        self.counter = counter
        self.columns = columns
        self.rows: list[tuple[int, int, int | None]] = []
        self._count: Any = None
        self._n_msgs = 0
        self._prev_chars = 0

    def __call__(self, p: Any) -> None:
        row = p.row
        if self.columns:
            self.rows.append((row.isl_tokens or 0, row.delta_tokens or 0, row.expected_osl_tokens))
            return
        exp = row.expected
        answer = wire_messages(exp)[0] if exp is not None else None
        has_system = bool(p.messages) and p.messages[0]["role"] == "system"
        if self.counter is None:
            if not self.rows:
                self._prev_chars = len(canonical_json(p.messages[:1])) if has_system else 2
            self.rows.append(
                (
                    row.prompt_chars,
                    row.prompt_chars - self._prev_chars,
                    None if answer is None else _answer_chars(answer),
                )
            )
            self._prev_chars = row.prompt_chars
            return
        if self._count is None:
            self._count = self.counter.start(p.tools)
            if has_system:
                self._count.add(p.messages[:1])
                self._n_msgs = 1
        delta = self._count.add(p.messages[self._n_msgs :])
        self._n_msgs = len(p.messages)
        self.rows.append(
            (self._count.isl(), delta, None if answer is None else self.counter.output_tokens(answer) or 0)
        )


def _answer_chars(answer: dict[str, Any]) -> int:
    """Characters of a recorded answer's text: reasoning, content and tool calls as JSON."""
    n = sum(len(answer.get(k) or "") for k in ("reasoning_content", "content"))
    return n + (len(canonical_json(answer["tool_calls"])) if answer.get("tool_calls") else 0)


def domain_tables(f: Facts) -> dict[str, DomainStats]:
    doms = ["all", *sorted(set(f.domain))]
    out: dict[str, DomainStats] = {}
    for d in doms:
        idx = [i for i, x in enumerate(f.domain) if d == "all" or x == d]
        per_inst = [n for k, v in f.instances.items() if d in ("all", k) for n in v]
        delays = [f.delay[i] for i in idx]
        out[d] = DomainStats(
            trajectories=sum(len(v) for k, v in f.trajectories.items() if d in ("all", k)),
            instances=len(per_inst),
            client_turns=len(idx),
            turns_per_trajectory=summarize(per_inst),
            isl=summarize([f.isl[i] for i in idx]),
            delta=summarize([f.delta[i] for i in idx]),
            expected_osl=summarize([o for i in idx if (o := f.osl[i]) is not None]),
            delay_seconds=Delays(
                **vars(summarize(delays)),
                total=_r(float(sum(delays)), 3) or 0,
                turns_with_delay=sum(1 for x in delays if x > 0),
            ),
        )
    return out


def growth(f: Facts) -> dict[str, list[GrowthPoint]]:
    """ISL against client turn index per domain: median and p90 over the instances reaching it."""
    by: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for dom, k, isl in zip(f.domain, f.index, f.isl, strict=True):
        by[dom][k].append(isl)
    out: dict[str, list[GrowthPoint]] = {}
    for dom in sorted(by):
        rows = []
        for k in sorted(by[dom]):
            d = distribution(by[dom][k])
            rows.append(GrowthPoint(k, d.n, _r(d.p(50)) or 0, _r(d.p(90)) or 0))  # n >= 1: never None
        out[dom] = rows
    return out
