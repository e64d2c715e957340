"""A sweep of official points and its submission tree, built once per session; tests that change
a tree work on their own copy (`tree`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from subtrees import DATE, swebench_dirs, system_file, write_sweep

import traces
from eval import submit


@pytest.fixture(scope="session")
def sweep(tmp_path_factory: pytest.TempPathFactory, sample_shards: Path) -> Path:
    """Points at concurrency 1, 2 and 4, each on the frontier."""
    return write_sweep(tmp_path_factory.mktemp("sweep") / "sweep", sample_shards)


@pytest.fixture(scope="session")
def region_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return swebench_dirs(tmp_path_factory.mktemp("swe"), [0.94, 0.935, 0.94, 0.95])


@pytest.fixture(scope="session")
def system_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return system_file(tmp_path_factory.mktemp("system"))


@pytest.fixture(scope="session")
def built_tree(
    tmp_path_factory: pytest.TempPathFactory, sweep: Path, region_runs: list[Path], system_yaml: Path
) -> Path:
    out = tmp_path_factory.mktemp("trees") / "submission"
    submit(
        [sweep],
        out,
        submitter="Acme",
        division="closed",
        system_file=system_yaml,
        swebench=region_runs,
        submission_date=DATE,
    )
    return out


@pytest.fixture
def tree(built_tree: Path, tmp_path: Path) -> Path:
    """A copy of the session's tree this test may change."""
    return Path(shutil.copytree(built_tree, tmp_path / "submission"))


@pytest.fixture(scope="session")
def official(sample_shards: Path) -> str:
    """The test dataset's content hash, standing in for the official one."""
    return traces.Shards(sample_shards).content_hash
