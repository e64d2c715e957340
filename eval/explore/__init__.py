"""The results explorer (`trajbench explore`, docs/explore.md): one folder, opened from disk, that
compares systems from submission trees, sweep folders and run folders, with every point's
verdict. A submission tree is read through the submission room's typed files (`eval.submission`,
docs/submission.md), by `load_submission`.
"""

from __future__ import annotations

from .model import VERDICTS, Audit, Built, ExploreData, ExplorePoint, ExploreSystem, explore_data
from .site import DATA_FILE, INDEX_FILE, ExploreSite, build_explorer, data_script
from .sources import SystemSource, discover
from .submission import Submission, TreePoint, load_submission

__all__ = [
    "DATA_FILE",
    "INDEX_FILE",
    "VERDICTS",
    "Audit",
    "Built",
    "ExploreData",
    "ExplorePoint",
    "ExploreSite",
    "ExploreSystem",
    "Submission",
    "SystemSource",
    "TreePoint",
    "build_explorer",
    "data_script",
    "discover",
    "explore_data",
    "load_submission",
]
