"""Shared test fixtures: the data the project ships or generates, and the official example.

Generic tests use data the project makes itself, so a fresh clone runs them all: the bundled
sample (`traces/data/sample.jsonl`), small files under `tests/data/`, and `coding_set`, the coding
trajectories of the seeded synthetic look-alike (`traces.synth`). Only the conformance tests
against the official example read `coding20` (`../shared/fixtures`, outside the repository) and
skip without it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests assert behaviour, never speed: no per-example deadline, which a loaded 2-core
# machine would trip at random (speed figures live in tests/bench/).
settings.register_profile("trajbench", deadline=None)
settings.load_profile("trajbench")

# A test run started in the background by a script (`pytest &`) ignores SIGINT, and so would every
# command it starts (an ignored signal stays ignored across exec): the Ctrl-C tests would see their
# commands finish. A handler, unlike an ignore, is reset to the default in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
SAMPLE = ROOT / "traces" / "data" / "sample.jsonl"

#: The synthetic coding set: `traces synth --seed 0 --scale 0.03` keeps 3 coding trajectories
#: (132, 43 and 189 client turns; long, fast-growing prompts like the official coding set's).
CODING_SEED = 0
CODING_SCALE = 0.03


def write_coding_set(path: Path, *, seed: int = CODING_SEED, scale: float = CODING_SCALE) -> Path:
    """The coding trajectories of the synthetic set, as mlperf-jsonl (same bytes on any machine)."""
    import traces
    from traces.synth import iter_synthetic

    writer = traces.FORMATS["mlperf-jsonl"].write
    assert writer is not None
    writer((t for t in iter_synthetic(seed, scale) if t.domain == "coding"), str(path))
    return path


@pytest.fixture(scope="session")
def coding_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic coding trajectories (mlperf-jsonl), written once per session (read-only)."""
    return write_coding_set(tmp_path_factory.mktemp("synth") / "coding.jsonl")


@pytest.fixture
def coding20() -> Path:
    """The official example: 20 real coding trajectories of the shared fixtures (skip when absent).
    For conformance tests only; generic tests use `coding_set`."""
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


@pytest.fixture(autouse=True)
def _no_user_profiles_left() -> Iterator[None]:
    """`--profiles FILE` loads user profiles for the rest of the process; each test starts and
    ends without them, as a fresh `trajbench` command does."""
    from traces.profiles.registry import clear_profile_files

    clear_profile_files()
    yield
    clear_profile_files()
