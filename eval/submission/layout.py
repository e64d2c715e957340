"""Where everything sits in a submission tree (docs/submission.md): spelled here and nowhere else.

The tree holds two layouts of the same reference files, because the two upstream tools disagree:
the reference client's `scripts/publish_submission.py` copies the performance files into
`{scenario}/performance/run_1/` and a `config.yaml` beside the accuracy results, while the MLPerf
submission checker's endpoints parser reads `{scenario}/performance/result_summary.json` (no
`run_1`) and `{scenario}/config.yaml` at the scenario root. Both are written, with the same bytes.
trajbench's own files sit where the checker does not look: the submission's manifest and the
SWE-bench runs at the tree root (the checker walks only the division folders), each point's run
folder under `{scenario}/trajbench/`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import EvalError

SUBMISSION_FILE = "trajbench-submission.json"
REVIEW_FILE = "review.json"
REVIEW_MD = "review.md"
#: trajbench's own folder: at the tree root (SWE-bench runs), and in each scenario (the run folder)
OWN_DIR = "trajbench"
SWEBENCH_DIR = f"{OWN_DIR}/swebench"
DIVISIONS = ("closed", "open")
#: the checker relabels a scenario folder named "online" as its Server scenario; with several
#: Pareto points per system a folder per concurrency keeps them apart (docs/submission.md)
SCENARIO_PREFIX = "online-c"
RESULT_SUMMARY = "result_summary.json"
CONFIG = "config.yaml"
ACCURACY_RESULTS = "accuracy_results.json"
MEASUREMENTS = "measurements.json"
README = "README.md"
#: a run folder's seal (each file's sha256, written by `replay run`); its digest goes in the manifest
SEAL_FILE = "seal.json"
#: files the review writes into a tree it checks: never part of the submission itself
NOT_SUBMITTED = frozenset({SUBMISSION_FILE, REVIEW_FILE, REVIEW_MD})
#: submitter, system and benchmark become folder names the checker walks
NAME_RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_name(option: str, value: str) -> str:
    """A submitter, system or benchmark name that is one safe folder name."""
    if not NAME_RULE.match(value):
        raise EvalError(
            f"{option} {value!r}: must be 1-128 letters, digits, '.', '_' or '-' starting with a letter or digit "
            "(it becomes a folder of the submission tree); e.g. Acme or 8xH100_vLLM"
        )
    return value


def scenario_name(concurrency: int) -> str:
    """The scenario folder of the point at `concurrency`: one stable name per concurrency."""
    return f"{SCENARIO_PREFIX}{concurrency:04d}"


def run_summary_file(run_dir: Path) -> Path:
    """A run folder's reference-shaped result_summary.json: `performance/result_summary.json`
    where the reference (and newer trajbench) writes it, else at the folder's root."""
    nested = run_dir / "performance" / RESULT_SUMMARY
    return nested if nested.is_file() else run_dir / RESULT_SUMMARY


@dataclass(frozen=True)
class Scenario:
    """One Pareto point's folder and the files in it."""

    dir: Path

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def summary(self) -> Path:  # the checker's path
        return self.dir / "performance" / RESULT_SUMMARY

    @property
    def config(self) -> Path:  # the checker's path (scenario root)
        return self.dir / CONFIG

    @property
    def run1_summary(self) -> Path:  # publish_submission.py's path
        return self.dir / "performance" / "run_1" / RESULT_SUMMARY

    @property
    def run1_config(self) -> Path:  # publish_submission.py's path
        return self.dir / "performance" / "run_1" / CONFIG

    @property
    def accuracy(self) -> Path:  # both
        return self.dir / "accuracy" / ACCURACY_RESULTS

    @property
    def accuracy_config(self) -> Path:  # publish_submission.py's path
        return self.dir / "accuracy" / CONFIG

    @property
    def measurements(self) -> Path:
        return self.dir / MEASUREMENTS

    @property
    def readme(self) -> Path:
        return self.dir / README

    @property
    def run(self) -> Path:  # the point's run folder, copied whole
        return self.dir / OWN_DIR


@dataclass(frozen=True)
class Tree:
    """A submission tree: `{root}/{division}/{submitter}/…` plus trajbench's files at the root."""

    root: Path
    division: str
    submitter: str
    system: str
    benchmark: str

    @property
    def manifest(self) -> Path:
        return self.root / SUBMISSION_FILE

    @property
    def submitter_dir(self) -> Path:
        return self.root / self.division / self.submitter

    @property
    def src(self) -> Path:
        return self.submitter_dir / "src"

    @property
    def system_file(self) -> Path:
        return self.submitter_dir / "systems" / f"{self.system}.json"

    @property
    def results(self) -> Path:
        return self.submitter_dir / "results" / self.system / self.benchmark

    def scenario(self, name: str) -> Scenario:
        return Scenario(self.results / name)

    def swebench(self, k: int, name: str) -> Path:
        return self.root / SWEBENCH_DIR / f"{k}-{name}"

    def rel(self, path: Path) -> str:
        """`path` relative to the tree root, with forward slashes (how the manifest names files)."""
        return path.relative_to(self.root).as_posix()
