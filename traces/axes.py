"""Chart axes that read at a glance, the same way in every chart of trajbench (`traces.png`
exports them): token counts in decimal units (`tokens`: 950, 64k, 1.5M, where k = 1,000 and
M = 1,000,000, as docs/metrics.md says), counts with thousands separators, concurrency on a log2
axis ticked at 1, 2, 4, 8 … with integer labels, and non-negative metrics on a y-axis that
starts at zero, so noise around a flat series is not blown up.

Only matplotlib's tickers are imported here: pyplot (and the Agg backend) is `traces.png`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullLocator

_UNITS = ((1e3, "k"), (1e6, "M"), (1e9, "B"))


def tokens(n: float) -> str:
    """A token count as a chart reads it, in decimal units: 950, 1.5k, 64k, 1M, 2.5B
    (k = 1,000, M = 1,000,000, B = 1,000,000,000; three significant digits at most)."""
    if n < 0:
        return "−" + tokens(-n)
    if n < 999.5:
        return f"{float(f'{n:.3g}'):g}"
    for size, unit in _UNITS:
        value = float(f"{n / size:.3g}")
        if value < 1000 or unit == "B":
            return f"{value:g}{unit}"
    raise AssertionError("unreachable: B takes any size")


def token_axis(axis: Axis) -> None:
    """Label an axis of token counts (or tokens/s) with `tokens`."""
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: tokens(v)))


def _thousands(v: float, _pos: int | None = None) -> str:
    return f"{v:,.0f}"


def count_axis(axis: Axis) -> None:
    """Tick an axis of counts at whole numbers only, labelled with thousands separators (1,024)."""
    axis.set_major_locator(MaxNLocator(integer=True))
    axis.set_major_formatter(FuncFormatter(_thousands))


def number_axis(axis: Axis) -> None:
    """Label an axis of plain numbers (ms, shares) with thousands separators: 0.25, 1,500."""
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"))


def concurrency_axis(ax: Axes, values: Iterable[int]) -> None:
    """A log2 x-axis of concurrencies ticked at the powers of two 1, 2, 4, 8 … that span the
    values, labelled as integers with thousands separators (1,024)."""
    vals = [v for v in values if v > 0]
    top = max(vals, default=1)
    ax.set_xscale("log", base=2)
    ticks = [2**k for k in range(max(0, math.ceil(math.log2(top))) + 1)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.set_xlim(min(vals, default=1) / 1.3, top * 1.3)


def zero_based(ax: Axes, values: Iterable[float | None]) -> None:
    """Start the y-axis of a non-negative metric at zero; a series that is all zero sits on
    the floor of a 0–1 axis instead of in the middle of an axis of rounding noise."""
    vals = [v for v in values if v is not None]
    top = max(vals, default=0.0)
    if top <= 0:
        ax.set_ylim(0, 1)
    else:
        ax.set_ylim(bottom=0, top=top * 1.08)


def log_token_axis(axis: Axis, lo: float, hi: float) -> None:
    """A log10 axis of token counts ticked at 1-2-5 steps (10k, 20k, 50k, 100k …), or at
    decades when the range spans more than four of them."""
    subs = (1.0,) if hi / max(lo, 1) > 1e4 else (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_minor_locator(NullLocator())
    token_axis(axis)
