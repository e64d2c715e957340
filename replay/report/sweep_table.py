"""What a sweep prints about its points: one line as each point finishes, and a table of every
point at the end, so the trade-off can be read before `trajbench report` draws it.

The numbers are the headline ones of each point's result_summary.json (`trajbench` section,
docs/metrics.md): system throughput, per-user speed, TTFT p90 and the turns that failed, and the
goodput of turns and of sessions when the runs had an SLO (`--slo`, `--session-slo`). A point
without a finished summary shows its status and no numbers: nothing is made up for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import traces

from ..results import ResultSummary, RunNumbers

#: The table's columns: header and width (the whole table fits 80 columns).
_COLUMNS = (("C", 6), ("status", 12), ("tok/s", 12), ("per-user tok/s", 16), ("TTFT p90 ms", 13), ("errors", 9))
#: Added when a point has goodput (replay.results.goodput): turns', then sessions' goodput.
_GOODPUT_COLUMNS = (("goodput tok/s", 15), ("session goodput", 17))


def _ttft_p90_ms(n: RunNumbers) -> float | None:
    v = n.ttft.p(90)
    return None if v is None else v / 1e6


def point_line(concurrency: int, n: RunNumbers) -> str:
    """`C=8: 1,234.5 tok/s  per-user 45.6 tok/s  TTFT p90 123.4 ms  errors 0`."""
    ttft = _ttft_p90_ms(n)
    errors = f"errors {n.turns.failed:,}" + (f" (+{n.turns.aborted:,} aborted)" if n.turns.aborted else "")
    return (
        f"C={concurrency}: {n.throughput.output_tokens_per_s:,.1f} tok/s  "
        f"per-user {n.interactivity.e2e_interactivity:,.1f} tok/s  "
        f"TTFT p90 {'-' if ttft is None else f'{ttft:,.1f}'} ms  {errors}"
        + (
            ""
            if n.goodput is None
            else f"  goodput {n.goodput.output_tokens_per_s:,.1f} tok/s (sessions {n.goodput.session_output_tokens_per_s:,.1f})"
        )
    )


def read_numbers(run_dir: str | Path) -> RunNumbers | None:
    """A point's numbers, or None when it has no readable result_summary.json."""
    try:
        return ResultSummary.read(run_dir).trajbench
    except traces.ContractError:
        return None


def sweep_table(points: Sequence[tuple[int, str, RunNumbers | None]]) -> list[str]:
    """The lines of a table of (concurrency, status, numbers) rows, one per point; with goodput
    columns when any point has goodput (a point without shows "-" there)."""
    with_goodput = any(n is not None and n.goodput is not None for _, _, n in points)
    columns = _COLUMNS + (_GOODPUT_COLUMNS if with_goodput else ())

    def row(cells: Sequence[str]) -> str:
        return "".join(
            f"{c:<{w}}" if k < 2 else f"{c:>{w}}" for k, (c, (_, w)) in enumerate(zip(cells, columns, strict=True))
        ).rstrip()

    lines = [row([h for h, _ in columns]), row(["-" * (w - 2) for _, w in columns])]
    for c, status, n in points:
        if n is None:
            lines.append(row([str(c), status, *("-" for _ in columns[2:])]))
            continue
        ttft = _ttft_p90_ms(n)
        cells = [
            str(c),
            status,
            f"{n.throughput.output_tokens_per_s:,.1f}",
            f"{n.interactivity.e2e_interactivity:,.1f}",
            "-" if ttft is None else f"{ttft:,.1f}",
            f"{n.turns.failed:,}",
        ]
        if with_goodput:
            g = n.goodput
            cells += (
                ["-", "-"] if g is None else [f"{g.output_tokens_per_s:,.1f}", f"{g.session_output_tokens_per_s:,.1f}"]
            )
        lines.append(row(cells))
    return lines
