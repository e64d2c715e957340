"""Deterministic PNG charts: one way every chart of trajbench (data cards, stats, reports) is
drawn and saved, so the same numbers give the same bytes with one matplotlib version.

matplotlib runs on the Agg backend (no display needed) and PNGs are saved without the
"Software" stamp. Importing this module imports matplotlib: the front door loads it lazily.
The axis helpers of `traces.axes` (token units, log2 concurrency, zero-based y) come with it,
so every chart reads the same way.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as _matplotlib

_matplotlib.use("Agg")  # before pyplot is imported: no display is needed or wanted
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .axes import concurrency_axis, count_axis, log_token_axis, number_axis, token_axis, tokens, zero_based

__all__ = [
    "Axes",
    "Figure",
    "concurrency_axis",
    "count_axis",
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
