"""A submission tree (docs/submission.md): its layout, the typed files in it, the reference-shaped
files made from a run folder, the self-check of the MLPerf checker's fields, the recomputation
of a point's numbers and the review's verdict.

`eval.submit` (trajbench submit) and `eval.review` (trajbench review) put these together with
the compliance check; readers of a tree (the results explorer) use the typed files here.
"""

from __future__ import annotations

from .files import FileEntry, TableDiff, compare_tables, copy_folder, file_table, folder_digest
from .layout import (
    DIVISIONS,
    NOT_SUBMITTED,
    REVIEW_FILE,
    REVIEW_MD,
    SEAL_FILE,
    SUBMISSION_FILE,
    Scenario,
    Tree,
    check_name,
    run_summary_file,
    scenario_name,
)
from .manifest import FORMAT_VERSION, Excluded, Headline, PointEntry, SubmissionManifest, Swebench, SwebenchRun
from .readme import scenario_readme, src_readme
from .recompute import (
    Difference,
    Recomputed,
    headline,
    headline_differences,
    null_keys,
    recompute,
)
from .refshape import AccuracyEntry, AccuracyResults, RefConfig, accuracy_results, reference_config, seeds_of
from .selfcheck import Finding, accepted, check_scenario, check_submitter
from .system import SYSTEM_FIELDS, Hardware, Measurements, SystemDescription, read_system_file
from .verdict import Changes, PointChange, ReviewCheck, ReviewReport, compare, markdown, report_of

__all__ = [
    "DIVISIONS",
    "FORMAT_VERSION",
    "NOT_SUBMITTED",
    "REVIEW_FILE",
    "REVIEW_MD",
    "SEAL_FILE",
    "SUBMISSION_FILE",
    "SYSTEM_FIELDS",
    "AccuracyEntry",
    "AccuracyResults",
    "Changes",
    "Difference",
    "Excluded",
    "FileEntry",
    "Finding",
    "Hardware",
    "Headline",
    "Measurements",
    "PointChange",
    "PointEntry",
    "Recomputed",
    "RefConfig",
    "ReviewCheck",
    "ReviewReport",
    "Scenario",
    "SubmissionManifest",
    "Swebench",
    "SwebenchRun",
    "SystemDescription",
    "TableDiff",
    "Tree",
    "accepted",
    "accuracy_results",
    "check_name",
    "check_scenario",
    "check_submitter",
    "compare",
    "compare_tables",
    "copy_folder",
    "file_table",
    "folder_digest",
    "headline",
    "headline_differences",
    "markdown",
    "null_keys",
    "read_system_file",
    "recompute",
    "reference_config",
    "report_of",
    "run_summary_file",
    "scenario_name",
    "scenario_readme",
    "seeds_of",
    "src_readme",
]
