"""SWE-bench instances from a local copy of the dataset: the first N rows in dataset order.

Nothing is fetched from a hub. The file is a Parquet file (or a folder holding the `test` split's
Parquet files, as a Hub download lays them out), a JSONL file or a JSON list. Every row must carry
what the agent needs (`instance_id`, `problem_statement`) and what the swebench harness (>= 5)
grades from (`repo`, `version`, `image`, `eval_script`, `log_parser`, `eval_type`,
`FAIL_TO_PASS`, `PASS_TO_PASS`); a missing column is reported before any request is sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import traces
from traces import TraceError

from .errors import SwebenchError

AGENT_FIELDS = ("instance_id", "problem_statement")
#: SWE-bench instance ids (`django__django-11099`, `scikit-learn__scikit-learn-10297`). An id names
#: the instance's folder in the run and its task repository under --repos, so anything else (a
#: path, `..`) is refused before a path is formed from it.
INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*__[A-Za-z0-9][A-Za-z0-9_.-]*-[0-9]+")
#: GitHub `owner/name`, which names the task repository folder `owner__name` under --repos.
REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
GRADING_FIELDS = ("repo", "version", "image", "eval_script", "log_parser", "eval_type", "FAIL_TO_PASS", "PASS_TO_PASS")

_WHAT_TO_PASS = (
    "pass --dataset with a local Parquet or JSONL copy of the SWE-bench Verified test split (nothing is downloaded)"
)


def load_instances(path: str | Path, n: int) -> list[dict[str, Any]]:
    """The first `n` instances of the dataset at `path`, in file order, checked for required fields."""
    p = Path(path)
    if not p.exists():
        raise SwebenchError(f"SWE-bench dataset not found: {p}; {_WHAT_TO_PASS}")
    rows = _read_rows(p)
    if len(rows) < n:
        raise SwebenchError(f"{p}: holds {len(rows)} instances, but {n} were asked for (--instances)")
    rows = rows[:n]
    seen: set[str] = set()
    for index, row in enumerate(rows):
        iid = row.get("instance_id") or f"row {index + 1}"
        missing = [f for f in AGENT_FIELDS + GRADING_FIELDS if row.get(f) in (None, "")]
        # an empty PASS_TO_PASS list is legitimate; only its absence is not
        missing = [f for f in missing if not (f == "PASS_TO_PASS" and f in row and row[f] is not None)]
        if missing:
            raise SwebenchError(
                f"{p}: instance {iid} (row {index + 1}) lacks {', '.join(missing)}; the agent needs "
                f"{', '.join(AGENT_FIELDS)} and the swebench harness grades from {', '.join(GRADING_FIELDS)}: "
                "use a SWE-bench Verified copy that carries the harness columns"
            )
        if not isinstance(row["instance_id"], str) or not INSTANCE_ID.fullmatch(row["instance_id"]):
            raise SwebenchError(
                f"{p}: row {index + 1}: instance_id {row['instance_id']!r} is not a SWE-bench instance id "
                "(owner__repo-NUMBER, e.g. django__django-11099); it names folders of the run, so fix the dataset"
            )
        if not isinstance(row["repo"], str) or not REPO.fullmatch(row["repo"]):
            raise SwebenchError(
                f"{p}: row {index + 1}: instance {iid}: repo {row['repo']!r} is not a GitHub owner/name (e.g. django/django); fix the dataset"
            )
        if iid in seen:
            raise SwebenchError(f"{p}: instance {iid} appears twice (row {index + 1}); instance ids must be unique")
        seen.add(iid)
    return rows


def _read_rows(p: Path) -> list[dict[str, Any]]:
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.parquet") if f.name.startswith("test"))
        if not files:
            raise SwebenchError(f"{p}: no test*.parquet file in this folder; {_WHAT_TO_PASS}")
        return [row for f in files for row in _read_parquet(f)]
    if p.suffix == ".parquet":
        return _read_parquet(p)
    if p.suffix == ".jsonl":
        return _read_jsonl(p)
    if p.suffix == ".json":
        try:
            data = json.loads(p.read_text("utf-8"))
        except json.JSONDecodeError as exc:
            raise SwebenchError(f"{p}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise SwebenchError(f"{p}: a .json dataset must be a list of instance objects")
        return data
    raise SwebenchError(f"{p}: unknown dataset file type {p.suffix!r}; {_WHAT_TO_PASS}")


def _read_parquet(p: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        rows: list[dict[str, Any]] = pq.read_table(p).to_pylist()
        return rows
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise SwebenchError(f"{p}: not a readable Parquet file ({exc})") from None


def _read_jsonl(p: Path) -> list[dict[str, Any]]:
    try:  # bounded lines: /dev/zero or a line without end is an error, not a hang
        return [row for _, row in traces.iter_json_objects(p)]
    except TraceError as exc:
        raise SwebenchError(str(exc)) from None
