"""Asking the engine itself: the preflight (what the target is and whether it answers), its
Prometheus prefix-cache counters, its tokenizer endpoint and the template parity check built on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .preflight import Target, identify, preflight
from .promscrape import CacheMetrics, scrape

if TYPE_CHECKING:
    from .template_parity import TemplateParity, check_template, default_template_tokenizer, render_parity


__all__ = [
    "CacheMetrics",
    "Target",
    "TemplateParity",
    "check_template",
    "default_template_tokenizer",
    "identify",
    "preflight",
    "render_parity",
    "scrape",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".template_parity": ("TemplateParity", "check_template", "default_template_tokenizer", "render_parity"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
