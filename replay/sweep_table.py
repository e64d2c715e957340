"""What a sweep prints about its points: one line as each point finishes, and a table of every
point at the end, so the trade-off can be read before `trajbench report` draws it.

The numbers are the headline ones of each point's result_summary.json (`trajbench` section,
docs/metrics.md): system throughput, per-user speed, TTFT p90 and the turns that failed. A point
without a finished summary shows its status and no numbers: nothing is made up for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import traces

from .numbers import RunNumbers
from .summary import ResultSummary

#: The table's columns: header and width (the whole table fits 80 columns).
_COLUMNS = (("C", 6), ("status", 12), ("tok/s", 12), ("per-user tok/s", 16), ("TTFT p90 ms", 13), ("errors", 9))


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
    )


def read_numbers(run_dir: str | Path) -> RunNumbers | None:
    """A point's numbers, or None when it has no readable result_summary.json."""
    try:
        return ResultSummary.read(run_dir).trajbench
    except traces.ContractError:
        return None


def sweep_table(points: Sequence[tuple[int, str, RunNumbers | None]]) -> list[str]:
    """The lines of a table of (concurrency, status, numbers) rows, one per point."""

    def row(cells: Sequence[str]) -> str:
        return "".join(
            f"{c:<{w}}" if k < 2 else f"{c:>{w}}" for k, (c, (_, w)) in enumerate(zip(cells, _COLUMNS, strict=True))
        ).rstrip()

    lines = [row([h for h, _ in _COLUMNS]), row(["-" * (w - 2) for _, w in _COLUMNS])]
    for c, status, n in points:
        if n is None:
            lines.append(row([str(c), status, "-", "-", "-", "-"]))
            continue
        ttft = _ttft_p90_ms(n)
        lines.append(
            row(
                [
                    str(c),
                    status,
                    f"{n.throughput.output_tokens_per_s:,.1f}",
                    f"{n.interactivity.e2e_interactivity:,.1f}",
                    "-" if ttft is None else f"{ttft:,.1f}",
                    f"{n.turns.failed:,}",
                ]
            )
        )
    return lines
