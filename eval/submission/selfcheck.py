"""The self-check of a submission tree: every field the MLPerf submission checker's endpoints
parser reads, in every file it reads, present and of the right type, and no template placeholder
left (docs/submission.md lists them). Paths follow the checker, not publish_submission.py; the
publish script's copies must hold the same bytes.

A null is accepted in two places only, where the reference writes null too and says why: an
early-stopping bound of a run with too few samples for it (the caller passes the keys the
recomputation leaves null, so a null the records do not justify fails), and `git_sha`
(trajbench is identified by `version`). `target_qps` is absent from a concurrency load, as the
reference leaves it out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .layout import Scenario, Tree
from .system import PLACEHOLDER, measurement_problems, system_problems

ES_PERCENTILES = ("50.0", "90.0", "95.0", "99.0", "99.9")
#: result_summary.json: key → "int", "number", "str" (each must be present and non-null)
SUMMARY_FIELDS: dict[str, str] = {
    "version": "str",
    "test_started_at": "int",
    "n_samples_issued": "int",
    "n_samples_completed": "int",
    "n_samples_failed": "int",
    "duration_ns": "int",
    "qps": "number",
    "tps": "number",
    **{
        f"{m}.{s}": "number"
        for m in ("latency", "ttft", "tpot", "output_sequence_lengths")
        for s in ("min", "max", "avg")
    },
}
ES_FIELDS = tuple(f"{m}.early_stopping_percentiles.{p}" for m in ("latency", "ttft", "tpot") for p in ES_PERCENTILES)
#: config.yaml (at the scenario root): key → type
CONFIG_FIELDS: dict[str, str] = {
    "type": "str",
    "version": "str",
    "model_params.streaming": "str",
    "settings.load_pattern.type": "str",
    "settings.load_pattern.target_concurrency": "int",
    "settings.runtime.min_duration_ms": "int",
    "settings.runtime.max_duration_ms": "int",
    "settings.runtime.n_samples_to_issue": "int",
    "settings.runtime.dataloader_random_seed": "int",
    "settings.runtime.scheduler_random_seed": "int",
}


@dataclass(frozen=True)
class Finding:
    """One problem (or, `passed`, an accepted null and why) in one file."""

    file: str
    key: str
    passed: bool
    reason: str

    def text(self) -> str:
        return f"{self.file}: {self.key}: {self.reason}" if self.key else f"{self.file}: {self.reason}"


def _get(data: Any, dotted: str) -> tuple[bool, Any]:
    """(found, value) of a dotted key; percentile keys such as "99.9" are matched whole."""
    cur = data
    parts = dotted.split(".")
    i = 0
    while i < len(parts):
        if not isinstance(cur, Mapping):
            return False, None
        for j in range(len(parts), i, -1):
            cand = ".".join(parts[i:j])
            if cand in cur:
                cur = cur[cand]
                i = j
                break
        else:
            return False, None
    return True, cur


def _typed(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str) and bool(value.strip())
    if isinstance(value, bool):
        return False
    if kind == "int":
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


_KINDS = {"str": "a non-empty string", "int": "an integer", "number": "a number"}


def _load_json(path: Path, rel: str, out: list[Finding]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        out.append(Finding(rel, "", False, "missing"))
    except (OSError, ValueError) as exc:
        out.append(Finding(rel, "", False, f"not readable JSON ({exc})"))
    return None


def _placeholders(data: Any, rel: str, where: str = "") -> list[Finding]:
    if isinstance(data, Mapping):
        return [f for k, v in data.items() for f in _placeholders(v, rel, f"{where}.{k}" if where else str(k))]
    if isinstance(data, list):
        return [f for k, v in enumerate(data) for f in _placeholders(v, rel, f"{where}[{k}]")]
    if isinstance(data, str) and PLACEHOLDER in data:
        return [Finding(rel, where, False, f"{data!r} is a template placeholder")]
    return []


def check_summary(path: Path, rel: str, allowed_nulls: frozenset[str]) -> list[Finding]:
    out: list[Finding] = []
    data = _load_json(path, rel, out)
    if data is None:
        return out
    for key, kind in SUMMARY_FIELDS.items():
        found, v = _get(data, key)
        if not found or v is None:
            out.append(Finding(rel, key, False, "missing or null; the checker reads it"))
        elif not _typed(v, kind):
            out.append(Finding(rel, key, False, f"must be {_KINDS[kind]}, got {v!r}"))
    for key in ES_FIELDS:
        found, v = _get(data, key)
        if found and v is None and key in allowed_nulls:
            out.append(Finding(rel, key, True, "null: the run has too few samples for this early-stopping bound"))
        elif not found or v is None:
            out.append(Finding(rel, key, False, "missing or null; the checker reads it"))
        elif not _typed(v, "number"):
            out.append(Finding(rel, key, False, f"must be a number, got {v!r}"))
    found, sha = _get(data, "git_sha")
    if not found:
        out.append(Finding(rel, "git_sha", False, "missing; the checker reads it"))
    elif sha is None:
        out.append(Finding(rel, "git_sha", True, "null: trajbench is identified by `version`"))
    elif not _typed(sha, "str"):
        out.append(Finding(rel, "git_sha", False, f"must be a string or null, got {sha!r}"))
    return out + _placeholders(data, rel)


def check_config(path: Path, rel: str) -> list[Finding]:
    out: list[Finding] = []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [Finding(rel, "", False, "missing")]
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return [Finding(rel, "", False, f"not readable YAML ({str(exc).splitlines()[0] if str(exc) else exc!r})")]
    for key, kind in CONFIG_FIELDS.items():
        found, v = _get(data, key)
        if not found or v is None:
            out.append(Finding(rel, key, False, "missing or null; the checker reads it"))
        elif not _typed(v, kind):
            out.append(Finding(rel, key, False, f"must be {_KINDS[kind]}, got {v!r}"))
    found, qps = _get(data, "settings.load_pattern.target_qps")
    pattern = _get(data, "settings.load_pattern.type")[1]
    if found and qps is not None and not _typed(qps, "number"):
        out.append(Finding(rel, "settings.load_pattern.target_qps", False, f"must be a number, got {qps!r}"))
    elif (not found or qps is None) and pattern != "agentic_inference":
        out.append(Finding(rel, "settings.load_pattern.target_qps", False, "missing; a rate-driven load states it"))
    return out + _placeholders(data, rel)


def check_accuracy(path: Path, rel: str) -> list[Finding]:
    out: list[Finding] = []
    data = _load_json(path, rel, out)
    if data is None:
        return out
    entries = data.get("accuracy_scores") if isinstance(data, Mapping) else None
    if not isinstance(entries, list) or not entries:
        return [Finding(rel, "accuracy_scores", False, "missing or empty; the checker needs an accuracy score")]
    for k, e in enumerate(entries):
        where = f"accuracy_scores[{k}]"
        if not isinstance(e, Mapping):
            out.append(Finding(rel, where, False, "must be an object"))
            continue
        if not _typed(e.get("score"), "number"):
            out.append(Finding(rel, f"{where}.score", False, f"must be a number, got {e.get('score')!r}"))
        if not _typed(e.get("dataset_type"), "str"):
            out.append(Finding(rel, f"{where}.dataset_type", False, f"must be a string, got {e.get('dataset_type')!r}"))
        issued = _get(e, "response_counts.issued")[1]
        if not (_typed(e.get("total_samples"), "int") or _typed(issued, "int")):
            out.append(
                Finding(rel, f"{where}.total_samples", False, "must be an integer (or response_counts.issued one)")
            )
    return out + _placeholders(data, rel)


def check_measurements(path: Path, rel: str) -> list[Finding]:
    out: list[Finding] = []
    data = _load_json(path, rel, out)
    if data is None:
        return out
    return [Finding(rel, "", False, p) for p in measurement_problems(data)]


def check_nonempty(path: Path, rel: str) -> list[Finding]:
    if not path.is_file():
        return [Finding(rel, "", False, "missing; the checker requires it")]
    if path.stat().st_size == 0:
        return [Finding(rel, "", False, "empty; the checker requires it non-empty")]
    return []


def check_same(copy: Path, original: Path, rel: str, original_rel: str) -> list[Finding]:
    """publish_submission.py's copy holds the bytes of the checker's file."""
    if not copy.is_file():
        return [Finding(rel, "", False, f"missing (publish_submission.py's copy of {original_rel})")]
    if original.is_file() and copy.read_bytes() != original.read_bytes():
        return [Finding(rel, "", False, f"differs from {original_rel}; the two layouts must hold the same bytes")]
    return []


def check_scenario(tree: Tree, scenario: Scenario, allowed_nulls: frozenset[str]) -> list[Finding]:
    """Every file the checker reads in one scenario folder, and the publish layout's copies."""
    r = tree.rel
    return [
        *check_summary(scenario.summary, r(scenario.summary), allowed_nulls),
        *check_config(scenario.config, r(scenario.config)),
        *check_accuracy(scenario.accuracy, r(scenario.accuracy)),
        *check_measurements(scenario.measurements, r(scenario.measurements)),
        *check_nonempty(scenario.readme, r(scenario.readme)),
        *check_same(scenario.run1_summary, scenario.summary, r(scenario.run1_summary), r(scenario.summary)),
        *check_same(scenario.run1_config, scenario.config, r(scenario.run1_config), r(scenario.config)),
        *check_same(scenario.accuracy_config, scenario.config, r(scenario.accuracy_config), r(scenario.config)),
    ]


def check_submitter(tree: Tree) -> list[Finding]:
    """systems/{system}.json and src/, the files of the submitter's folder the checker reads."""
    out: list[Finding] = []
    rel = tree.rel(tree.system_file)
    data = _load_json(tree.system_file, rel, out)
    if data is not None:
        if isinstance(data, Mapping):
            out += [
                Finding(rel, "", False, p)
                for p in system_problems(data, submitter=tree.submitter, division=tree.division)
            ]
        else:
            out.append(Finding(rel, "", False, "must be an object of the system fields"))
    if not tree.src.is_dir() or not any(tree.src.iterdir()):
        out.append(Finding(tree.rel(tree.src), "", False, "missing or empty; the checker requires the folder"))
    return out


def accepted(findings: list[Finding]) -> list[str]:
    """The accepted nulls, one line per file and reason (a small run has a dozen of them)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for f in findings:
        if f.passed:
            groups.setdefault((f.file, f.reason), []).append(f.key.replace(".early_stopping_percentiles.", " ES "))
    return [f"{file}: {', '.join(keys)}: {reason}" for (file, reason), keys in groups.items()]
