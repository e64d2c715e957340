"""What the explorer's input folders hold: submission trees, sweep folders and run folders, found
by the files that mark them, each turned into the systems it measured.

- A submission tree (its `trajbench-submission.json`) is one system: its submitter's system on
  its model, with the points its manifest lists. Several trees of the same submitter, system and
  model are the same system built up over time (a rolling submission): at each concurrency its
  latest run is the point.
- A sweep folder (`sweep.json`) is one system; a run folder outside any sweep or submission is one
  too. Each is named by its path under the folder given (its own name when given directly), or
  by `--label NAME=DIR[,DIR…]`, which also joins several folders into one system.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from replay import RUN_FILE, ResultSummary, SweepPlan

from ..errors import EvalError
from ..submission import SUBMISSION_FILE
from .submission import Submission, load_submission


@dataclass(frozen=True)
class SystemSource:
    """The folders of one system and, for a submitted system, the submissions they came from."""

    label: str
    kind: str  # "submission", "sweep" or "run" (the kind of its first folder)
    folders: tuple[Path, ...]  # run or sweep folders (collect_points' inputs)
    submissions: tuple[Submission, ...] = ()
    given_as: tuple[str, ...] = field(default=())  # how each folder is shown (relative to the input)

    def submission_of(self, run_dir: Path) -> Submission | None:
        for s in self.submissions:
            if run_dir in s.run_dirs:
                return s
        return None


def _is_run(folder: Path) -> bool:
    return (folder / RUN_FILE).is_file() and ResultSummary.exists(folder)


def _scan(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """Submission roots, sweep folders and lone run folders at or under `folder`, each sorted, in
    one walk: everything under a submission root belongs to the submission, a sweep's run folders
    to the sweep."""
    subs: list[Path] = []
    sweeps: list[Path] = []
    runs: list[Path] = []
    for here, dirs, files in os.walk(folder):
        path = Path(here)
        if SUBMISSION_FILE in files or SweepPlan.FILE in files:
            (subs if SUBMISSION_FILE in files else sweeps).append(path)
            dirs.clear()
        elif RUN_FILE in files and ResultSummary.exists(path):
            runs.append(path)
    return sorted(subs), sorted(sweeps), sorted(runs)


def _name(folder: Path, given: Path) -> str:
    rel = folder.relative_to(given).as_posix()
    return given.resolve().name if rel == "." else rel


def discover(dirs: list[Path], labels: list[tuple[str, Path]] | None = None) -> list[SystemSource]:
    """The systems of the given folders (searched) and of the labelled ones (each a sweep or run
    folder of the system it names), sorted by name."""
    by_label: dict[str, list[tuple[Path, str]]] = {}
    kinds: dict[str, str] = {}
    submitted: dict[tuple[str, str, str], list[Submission]] = {}
    for name, folder in labels or []:
        kind = "sweep" if SweepPlan.exists(folder) else "run" if _is_run(folder) else ""
        if not kind:
            raise EvalError(
                f"--label {name}={folder}: neither a sweep folder ({SweepPlan.FILE}) nor a finished run folder "
                f"({RUN_FILE} with its result summary); a submission tree names its own system (docs/explore.md)"
            )
        by_label.setdefault(name, []).append((folder, folder.as_posix()))
        kinds.setdefault(name, kind)
    labelled = {folder.resolve() for _, folder in labels or []}
    for given in dirs:
        subs, sweeps, runs = _scan(given)
        if not (subs or sweeps or runs):
            raise EvalError(
                f"{given}: no submission tree ({SUBMISSION_FILE}), sweep folder ({SweepPlan.FILE}) or finished run "
                f"folder ({RUN_FILE} with its result summary) in it (docs/explore.md)"
            )
        for root in subs:
            s = load_submission(root)
            key = (s.manifest.submitter, s.manifest.system, s.manifest.profile)
            submitted.setdefault(key, []).append(s)
        for kind, found in (("sweep", sweeps), ("run", runs)):
            for folder in found:
                if folder.resolve() in labelled:  # a --label names it: it is that system's
                    continue
                name = _name(folder, given)
                if name in by_label and not any(f.resolve() == folder.resolve() for f, _ in by_label[name]):
                    other = by_label[name][0][1]
                    raise EvalError(
                        f"two folders would both be the system {name!r}: {other} and {folder}; name them with "
                        "--label NAME=DIR (or --label NAME=DIR,DIR for the folders of one system)"
                    )
                by_label.setdefault(name, []).append((folder, folder.as_posix()))
                kinds.setdefault(name, kind)
    sources = [
        SystemSource(name, kinds[name], tuple(f for f, _ in found), (), tuple(g for _, g in found))
        for name, found in by_label.items()
    ]
    for (submitter, system, profile), found_trees in submitted.items():
        trees = sorted(found_trees, key=lambda s: (s.manifest.submission_date, s.root.as_posix()))
        label = f"{submitter} / {system}"
        if sum(1 for k in submitted if k[:2] == (submitter, system)) > 1:
            label += f" ({profile})"
        if any(s.label == label for s in sources):
            raise EvalError(
                f"the submitted system {label!r} and a sweep or run folder of the same name; rename the folder "
                "with --label NAME=DIR"
            )
        sources.append(
            SystemSource(
                label,
                "submission",
                tuple(d for s in trees for d in s.run_dirs),
                tuple(trees),
                tuple(s.root.as_posix() for s in trees),
            )
        )
    return sorted(sources, key=lambda s: s.label)
