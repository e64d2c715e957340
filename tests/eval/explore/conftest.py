"""The explorer tests' submission maker: trees written by `trajbench submit` over the eval tests'
shards, each point measured in a scratch folder of the session (never inside an input)."""

from __future__ import annotations

from pathlib import Path

import pytest
from explore_trees import Submitter


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory, sample_shards: Path) -> Submitter:
    return Submitter(sample_shards, tmp_path_factory.mktemp("measured"))
