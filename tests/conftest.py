"""Shared test fixtures: paths to the sample traces and the shared conformance fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
SAMPLE = ROOT / "traces" / "data" / "sample.jsonl"


@pytest.fixture
def coding20() -> Path:
    """The 20 real coding trajectories of the shared fixtures (skip when absent)."""
    path = FIXTURES / "mlperf_coding_20.jsonl"
    if not path.is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES} (a clone outside the workspace)")
    return path


@pytest.fixture
def sample() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def sample_shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample built once per session with the default options (read-only)."""
    import traces

    out = tmp_path_factory.mktemp("shards") / "sample"
    traces.build_shards([str(SAMPLE)], out, traces.BuildOptions(name="sample"))
    return out
