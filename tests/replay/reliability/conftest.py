"""Fixtures of the reliability tests (helpers live in reliability_helpers.py)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from pathlib import Path

import pytest
from reliability_helpers import build_shards


@pytest.fixture
def make_shards(tmp_path: Path) -> Callable[..., Path]:
    """`make_shards({"t1": [0.0, 0.0]})`: built shards, one user turn per delay."""
    names = count()
    return lambda trajectories, name=None: build_shards(tmp_path, trajectories, name or f"s{next(names)}")
