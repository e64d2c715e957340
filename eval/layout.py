"""The file names eval writes into a run folder, spelled here and nowhere else, and the one
writer of scores.json, which the inline scores and a SWE-bench run's line share."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from .errors import EvalError

SCORES_FILE = "scores.json"
OSL_FILE = "osl.json"
SWEBENCH_SUMMARY_FILE = "swebench_summary.json"


def merge_scores(folder: str | os.PathLike[str], entries: dict[str, Any]) -> Path:
    """Write `entries` into the folder's scores.json, keeping its other keys; atomically, so a
    reader sees the old file or the new one. A file that is not a JSON object is refused: the
    keys it may hold would be lost."""
    path = Path(folder) / SCORES_FILE
    old: dict[str, Any] = {}
    if path.is_file():
        try:
            loaded = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise EvalError(
                f"{path}: not valid JSON ({exc}); fix or remove it, new scores are merged into it"
            ) from None
        if not isinstance(loaded, dict):
            raise EvalError(f"{path}: not a JSON object; fix or remove it, new scores are merged into it")
        old = loaded
    merged = {**{k: v for k, v in old.items() if k not in entries}, **entries}
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(orjson.dumps(merged, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, path)
    return path
