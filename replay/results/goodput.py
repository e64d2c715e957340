"""Goodput under service-level objectives (docs/metrics.md): the output tokens per second of the
turns, and of the whole sessions, that met their SLOs.

Throughput counts every token a server produced, however late; a buyer with a latency budget
counts only the tokens that arrived within it. Two views:

- per turn (`--slo ttft_ms=X,tpot_ms=Y`): a turn is good when it succeeded, its TTFT is at most X
  ms and its TPOT at most Y ms (either key may be left out: no limit);
- per session (`--session-slo SECONDS`): a trajectory instance is good when every one of its
  turns succeeded and met the per-turn SLO, and its active time, the sum of its turns' E2E
  without the recorded delays between them, is at most the limit. Only sessions that ended are
  judged: one cut off by the end of the run (turns of its trajectory never sent, or cancelled)
  would be judged on a part of itself, so it is counted as incomplete instead.

Both are divided by the duration the throughput uses (the performance window), over the same
turns (the window turns that succeeded), so goodput <= throughput always, and with no limit at
all (and no failed turn, for sessions) goodput equals throughput.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from .numbers import Goodput
from .records import Record, e2e_ns, tpot_ns, ttft_ns
from .slo import Slo


def turn_met(r: Record, slo: Slo) -> bool:
    """A succeeded turn within the per-turn limits. A turn that streamed no token has no TTFT and
    fails a TTFT limit; one with no token after its first chunk has no TPOT and cannot break one."""
    if not r.ok:
        return False
    if slo.ttft_ms is not None:
        t = ttft_ns(r)
        if t is None or t > slo.ttft_ms * 1e6:
            return False
    if slo.tpot_ms is not None:
        tp = tpot_ns(r)
        if tp is not None and tp > slo.tpot_ms * 1e6:
            return False
    return True


def active_seconds(turns: Sequence[Record]) -> float:
    """A session's active time: its turns' E2E summed, the delays between them left out (a turn
    that never got an answer counts until it failed, via its last timestamp when it has one)."""
    return sum(v for r in turns if (v := e2e_ns(r)) is not None) / 1e9


def session_ended(turns: Sequence[Record], expected: int | None) -> bool:
    """A session the run saw to its end: every turn of its trajectory (`expected`, None: unknown)
    sent and finished, or a failed turn ended it (the system's failure, which the SLO judges); not
    one cut off by the end of the run (a turn cancelled, or turns never sent). A partial turn
    ends nothing: its trajectory goes on (docs/closed-loop.md)."""
    if any(r.error_kind == "cancelled" for r in turns):
        return False
    if any(r.failed for r in turns):
        return True
    return expected is None or len({r.turn for r in turns}) >= expected


def goodput(
    records: Sequence[Record], slo: Slo, duration_ns: int, trajectory_turns: Mapping[str, int] | None = None
) -> Goodput:
    """Goodput of turns and of sessions over `duration_ns` (the throughput's window duration);
    `trajectory_turns` (trajectory id → its client turns) tells a session cut off by the end of
    the run from one that ended (without it, only a cancelled turn marks one cut off)."""
    sent = [r for r in records if r.error_kind != "aborted"]
    good = [r for r in sent if r.in_window and r.ok]
    seconds = duration_ns / 1e9

    def tokens(rs: Sequence[Record]) -> int:
        return sum(n for r in rs if (n := r.output_tokens()) is not None)

    met = [r for r in good if turn_met(r, slo)]
    by: dict[str, list[Record]] = defaultdict(list)
    for r in sent:
        by[r.instance_id].append(r)
    seen = sorted({r.instance_id for r in good})
    lengths = trajectory_turns or {}
    sessions = [k for k in seen if session_ended(by[k], lengths.get(by[k][0].trajectory_id))]
    sessions_ok = [
        k
        for k in sessions
        if all(turn_met(r, slo) for r in by[k]) and (slo.session_s is None or active_seconds(by[k]) <= slo.session_s)
    ]
    session_tokens = tokens([r for k in sessions_ok for r in by[k] if r.in_window and r.ok])
    return Goodput(
        ttft_ms=slo.ttft_ms,
        tpot_ms=slo.tpot_ms,
        session_s=slo.session_s,
        turns=len(good),
        turns_met=len(met),
        output_tokens_met=tokens(met),
        output_tokens_per_s=tokens(met) / seconds if seconds > 0 else 0.0,
        turns_met_share=len(met) / len(good) if good else None,
        sessions=len(sessions),
        sessions_met=len(sessions_ok),
        session_output_tokens_met=session_tokens,
        session_output_tokens_per_s=session_tokens / seconds if seconds > 0 else 0.0,
        sessions_met_share=len(sessions_ok) / len(sessions) if sessions else None,
        sessions_incomplete=len(seen) - len(sessions),
    )
