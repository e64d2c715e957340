"""Deterministic PNG charts: one way every chart of trajbench (data cards, stats, reports) is
drawn and saved, so the same numbers give the same bytes with one matplotlib version.

matplotlib runs on the Agg backend (no display needed) and PNGs are saved without the
"Software" stamp. Importing this module imports matplotlib: the front door loads it lazily.
The axis helpers of `traces.axes` (token units, log2 concurrency, zero-based y) come with it,
so every chart reads the same way.
"""

from __future__ import annotations

from collections.abc import Sequence as _Sequence
from pathlib import Path

import matplotlib as _matplotlib

_matplotlib.use("Agg")  # before pyplot is imported: no display is needed or wanted
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from .axes import concurrency_axis, count_axis, log_token_axis, number_axis, token_axis, tokens, zero_based

__all__ = [
    "Annotation",
    "Axes",
    "Figure",
    "concurrency_axis",
    "count_axis",
    "label_points",
    "log_token_axis",
    "number_axis",
    "plt",
    "save_png",
    "token_axis",
    "tokens",
    "zero_based",
]


def save_png(fig: Figure, path: Path, *, dpi: int = 100) -> Path:
    """Lay out, save without metadata that varies, and close the figure (figures hold memory)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return path


#: Where a point's label may go, in points from the point, tried in this order: right above,
#: right below, left above, left below, straight above, straight below.
_LABEL_SPOTS = (
    (4, 3, "left"),
    (4, -11, "left"),
    (-4, 3, "right"),
    (-4, -11, "right"),
    (0, 7, "center"),
    (0, -15, "center"),
)


def label_points(
    fig: Figure,
    ax: Axes,
    labelled: _Sequence[tuple[str, float, float]],
    avoid: _Sequence[tuple[float, float]] = (),
) -> list[Annotation]:
    """Put each (text, x, y) label beside its point where it overlaps no label placed before it,
    no marker (the labelled points' and the unlabelled ones in `avoid`) and stays inside the axes, trying `_LABEL_SPOTS` in order; a label with no free
    spot is left out (a chart's table has every point), rather than drawn over another.

    Placed on the laid-out figure, and kept out of later layout, so what was checked is what is
    saved. Deterministic: the same points, the same places."""
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    inside = ax.get_window_extent(renderer)
    markers = [ax.transData.transform(xy) for xy in [*((x, y) for _, x, y in labelled), *avoid]]
    placed: list[Annotation] = []
    for text, x, y in labelled:
        for dx, dy, ha in _LABEL_SPOTS:
            note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=7, ha=ha)
            note.set_in_layout(False)
            box = note.get_window_extent(renderer)
            clear = (
                inside.contains(box.x0, box.y0)
                and inside.contains(box.x1, box.y1)
                and not any(box.overlaps(other.get_window_extent(renderer)) for other in placed)
                and not any(box.x0 - 3 < mx < box.x1 + 3 and box.y0 - 3 < my < box.y1 + 3 for mx, my in markers)
            )
            if clear:
                placed.append(note)
                break
            note.remove()
    return placed
