"""The results explorer (`trajbench explore`, docs/explore.md): one folder, opened from disk, that
compares systems from submission trees, sweep folders and run folders, with every point's
verdict. Everything read from a submission tree goes through `submission` (its typed files).
"""

from __future__ import annotations

from .model import VERDICTS, Audit, Built, ExploreData, ExplorePoint, ExploreSystem, explore_data
from .site import DATA_FILE, INDEX_FILE, ExploreSite, build_explorer, data_script
from .sources import SystemSource, discover
from .submission import (
    REVIEW_FILE,
    SUBMISSION_FILE,
    Review,
    ReviewCheck,
    Submission,
    SubmissionManifest,
    SubmittedPoint,
    SystemDescription,
    load_submission,
)

__all__ = [
    "DATA_FILE",
    "INDEX_FILE",
    "REVIEW_FILE",
    "SUBMISSION_FILE",
    "VERDICTS",
    "Audit",
    "Built",
    "ExploreData",
    "ExplorePoint",
    "ExploreSite",
    "ExploreSystem",
    "Review",
    "ReviewCheck",
    "Submission",
    "SubmissionManifest",
    "SubmittedPoint",
    "SystemDescription",
    "SystemSource",
    "build_explorer",
    "data_script",
    "discover",
    "explore_data",
    "load_submission",
]
