"""Asking the engine itself: the preflight (what the target is and whether it answers), the model
name it serves, who it says it is (its identity for the same-model audit), the reset of its prefix
cache (`--flush-cache`), its Prometheus prefix-cache counters, its tokenizer endpoint and the
template parity check built on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .flush import RESET_ROUTES, FlushRefused, flush_prefix_cache
from .identity import probe_engine
from .preflight import Target, identify, preflight
from .promscrape import CacheMetrics, scrape
from .served import ModelChoice, ModelNotServed, choose_model

if TYPE_CHECKING:
    from .template_parity import TemplateParity, check_template, default_template_tokenizer, render_parity


__all__ = [
    "RESET_ROUTES",
    "CacheMetrics",
    "FlushRefused",
    "ModelChoice",
    "ModelNotServed",
    "Target",
    "TemplateParity",
    "check_template",
    "choose_model",
    "default_template_tokenizer",
    "flush_prefix_cache",
    "identify",
    "preflight",
    "probe_engine",
    "render_parity",
    "scrape",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".template_parity": ("TemplateParity", "check_template", "default_template_tokenizer", "render_parity"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
