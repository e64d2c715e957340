"""Data cards: Markdown with YAML front matter made from a dataset's manifest and statistics, and
the check that a card still matches its dataset (docs/maintainers.md). Pulls in matplotlib.
"""

from __future__ import annotations

from .card import check_card, parse_card, write_card

__all__ = [
    "check_card",
    "parse_card",
    "write_card",
]
