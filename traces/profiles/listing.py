"""`trajbench profiles`: every profile as a block of labelled lines that fits 80 columns.

A table of nine columns (the request parameters alone run to 60 characters for Qwen3.6) needs
about 160 columns and breaks in the middle of its cells on a common terminal; a block per profile
reads the same at any width.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..text import field_lines
from .registry import Profile

_LABEL = 18


def _band(lo: float | None, hi: float | None) -> str:
    return "not set" if lo is None or hi is None else f"{lo:g}-{hi:g} output tokens per turn"


def _at_least(x: float | None) -> str:
    return "not set" if x is None else f">= {100 * x:.2f} %"


def profile_lines(profiles: Iterable[Profile]) -> list[str]:
    """One block per profile: its name and source, then one labelled field a line."""
    out: list[str] = []
    for p in profiles:
        if out:
            out.append("")
        out.append(f"{p.name} ({p.source})")
        t = p.thresholds
        params = ", ".join(f"{k}={json.dumps(v)}" for k, v in p.request_params().items())
        for label, value in (
            ("description", p.description),
            ("served model", p.served_model_name),
            ("tokenizer", p.tokenizer),
            ("request parameters", params),
            ("inline accuracy", _at_least(t.inline)),
            ("OSL band", _band(t.osl_min, t.osl_max)),
            ("SWE-bench", f"{_at_least(t.swebench)}, agent template {p.swebench_template}"),
        ):
            out += field_lines(label, value, label_width=_LABEL, indent=2)
    return out
