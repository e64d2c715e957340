"""Asking the engine itself: the preflight (what the target is and whether it answers), the model
name it serves, its Prometheus prefix-cache counters, its tokenizer endpoint and the template
parity check built on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .preflight import Target, identify, preflight
from .promscrape import CacheMetrics, scrape
from .served import MODEL_SOURCES, ModelChoice, ModelNotServed, choose_model

if TYPE_CHECKING:
    from .template_parity import TemplateParity, check_template, default_template_tokenizer, render_parity

_LAZY = {
    "TemplateParity": ".template_parity",
    "check_template": ".template_parity",
    "default_template_tokenizer": ".template_parity",
    "render_parity": ".template_parity",
}
__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "MODEL_SOURCES",
    "CacheMetrics",
    "ModelChoice",
    "ModelNotServed",
    "Target",
    "TemplateParity",
    "check_template",
    "choose_model",
    "default_template_tokenizer",
    "identify",
    "preflight",
    "render_parity",
    "scrape",
]
