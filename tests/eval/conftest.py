"""Shards fixtures of the eval tests, built once per session with a word counter."""

from __future__ import annotations

from pathlib import Path

import pytest
from evalruns import WordCounter

import traces

#: A hand-written coding trajectory whose recorded answers include some without a recognised bash
#: action (`cd`/`echo` only, no tool call): the synthetic coding set has none, the official one has.
UNSCORABLE = Path(__file__).resolve().parents[1] / "data" / "coding_unscorable.jsonl"


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
def coding_sources(coding_set: Path) -> list[Path]:
    """The coding sources of the eval tests: the synthetic coding set, then `UNSCORABLE`."""
    return [coding_set, UNSCORABLE]


@pytest.fixture(scope="session")
def coding_shards(tmp_path_factory: pytest.TempPathFactory, coding_sources: list[Path]) -> Path:
    """Coding-only shards (synthetic trajectories plus `UNSCORABLE`), built once per session."""
    out = tmp_path_factory.mktemp("shards") / "coding"
    traces.build_shards(
        [str(p) for p in coding_sources], out, traces.BuildOptions(name="coding"), counter=WordCounter()
    )
    return out
