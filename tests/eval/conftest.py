"""Shards fixtures of the eval tests, built once per session with a word counter."""

from __future__ import annotations

from pathlib import Path

import pytest
from evalruns import WordCounter

import traces


@pytest.fixture(scope="session")
def sample_shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shards") / "sample"
    traces.build_shards(
        [str(Path(traces.__file__).parent / "data" / "sample.jsonl")],
        out,
        traces.BuildOptions(name="sample"),
        counter=WordCounter(),
    )
    return out


@pytest.fixture(scope="session")
def coding20_shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 20 real coding trajectories, built once per session (skip when absent)."""
    src = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "mlperf_coding_20.jsonl"
    if not src.is_file():
        pytest.skip("shared fixtures not found (a clone outside the workspace)")
    out = tmp_path_factory.mktemp("shards") / "coding20"
    traces.build_shards([str(src)], out, traces.BuildOptions(name="coding20"), counter=WordCounter())
    return out
