"""The system description: the submitter's file (`--system-file`), checked field by field, and the
two files made from it, `systems/{system}.json` and each scenario's `measurements.json`.

The file is YAML or JSON: the MLPerf checker's system fields at the top level (every one it
requires, SYSTEM_FIELDS), a `measurements` mapping (the five fields the checker wants in each
scenario's measurements.json) and a `trajbench` mapping (the accelerator type and count, the
price per hour in USD and the power in W that the results explorer normalises by). `submitter`
and `division` may be left out: the command's options fill them, and a file that states other
values is refused. Every problem is reported at once, one line each, as
`FILE: KEY: what is wrong; how to fix it` (docs/submission.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import traces

from ..errors import EvalError
from .layout import MEASUREMENTS

#: Every field the MLPerf submission checker requires in systems/{system}.json, in its order.
SYSTEM_FIELDS = (
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
)
#: Of those, the ones the checker wants a non-empty answer for (the rest may be "").
MEANINGFUL_FIELDS = frozenset(
    {
        "division",
        "submitter",
        "system_type",
        "status",
        "system_name",
        "number_of_nodes",
        "host_processor_model_name",
        "host_processors_per_node",
        "host_processor_core_count",
        "host_memory_capacity",
        "host_memory_configuration",
        "host_storage_capacity",
        "host_storage_type",
        "host_networking",
        "host_network_card_count",
        "host_networking_topology",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_host_interconnect",
        "accelerator_memory_configuration",
        "accelerator_interconnect",
        "cooling",
        "framework",
        "operating_system",
        "other_software_stack",
    }
)
STATUSES = ("available", "preview", "rdi")
SYSTEM_TYPES = ("datacenter", "edge", "datacenter,edge", "edge,datacenter")
#: The five fields of measurements.json the checker requires, non-empty.
MEASUREMENT_FIELDS = (
    "starting_weights_filename",
    "weight_data_types",
    "input_data_types",
    "retraining",
    "weight_transformations",
)
#: A value still holding this is a template's placeholder, not an answer.
PLACEHOLDER = "TODO"
SUFFIXES = (".yaml", ".yml", ".json")
MEASUREMENTS_KEY = "measurements"
OWN_KEY = "trajbench"
#: trajbench's keys: what each must be and an example for the fix
HARDWARE_FIELDS: dict[str, tuple[str, str]] = {
    "accelerator_type": ("a non-empty string naming the accelerator model", '"H100-SXM-80GB"'),
    "accelerator_count": ("an integer >= 1: accelerators in the whole system", "8"),
    "price_per_hour_usd": ("a number > 0 (USD per hour for the whole system), or null if not disclosed", "98.32"),
    "power_watts": ("a number > 0 (W for the whole system under load), or null if not disclosed", "5600"),
}


@dataclass(frozen=True)
class Hardware:
    """trajbench's keys of the system description: what a buyer normalises throughput by."""

    accelerator_type: str
    accelerator_count: int
    price_per_hour_usd: float | None
    power_watts: float | None


@dataclass(frozen=True)
class Measurements(traces.JsonFile):
    """measurements.json of every scenario: the model's weights and data types."""

    FILE = MEASUREMENTS
    SORT_KEYS = False

    starting_weights_filename: str
    weight_data_types: str
    input_data_types: str
    retraining: str
    weight_transformations: str


@dataclass(frozen=True)
class SystemDescription:
    """systems/{system}.json: the checker's fields (in its order, then any other MLPerf field the
    submitter gave, sorted), then trajbench's under `trajbench`. Field names like
    `accelerator_on-chip_memories` are not identifiers, so the values are kept as a mapping."""

    values: dict[str, str | int | float]
    hardware: Hardware

    def to_json(self) -> dict[str, Any]:
        ordered = {k: self.values[k] for k in SYSTEM_FIELDS}
        ordered.update({k: self.values[k] for k in sorted(self.values) if k not in ordered})
        return {**ordered, OWN_KEY: traces.to_json(self.hardware)}

    def text(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> SystemDescription:
        """A written systems/{system}.json back (its problems are the self-check's, which runs
        `system_problems` on the same data); a file this cannot even hold raises."""
        own = data.get(OWN_KEY)
        if not isinstance(own, Mapping):
            raise EvalError(f"{where}: {OWN_KEY}: missing or not a mapping")
        try:
            hardware = traces.from_json(Hardware, dict(own), f"{where}: {OWN_KEY}")
        except traces.ContractError as exc:
            raise EvalError(str(exc)) from None
        values = {k: v for k, v in data.items() if k != OWN_KEY and _is_value(v)}
        return cls(values, hardware)


def _is_value(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def _count(v: Any) -> int | None:
    """An integer written as a number or a string ("8"), else None."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return None


def _placeholder(v: Any) -> bool:
    return isinstance(v, str) and PLACEHOLDER in v


def system_problems(data: Mapping[str, Any], *, submitter: str, division: str) -> list[str]:
    """Every problem of a system description's checker fields and trajbench keys, each
    `KEY: rule; fix` (empty when good). `data` is the flat JSON form (no `measurements`)."""
    problems: list[str] = []
    for key in SYSTEM_FIELDS:
        if key not in data:
            problems.append(f"{key}: missing; add it (the MLPerf checker requires every system field)")
            continue
        v = data[key]
        if not _is_value(v):
            problems.append(f"{key}: must be a string or a number, got {v!r}")
        elif key in MEANINGFUL_FIELDS and not str(v).strip():
            problems.append(f"{key}: empty; the MLPerf checker wants a meaningful answer here")
    for key, v in data.items():
        if key == OWN_KEY:
            continue
        if key not in SYSTEM_FIELDS and not _is_value(v):
            problems.append(f"{key}: must be a string or a number, got {v!r}")
        if _placeholder(v):
            problems.append(f"{key}: {v!r} is a template placeholder; replace it with the system's answer")
    status = data.get("status")
    if "status" in data and not (isinstance(status, str) and status.lower() in STATUSES):
        problems.append(f"status: {status!r} is not one of {', '.join(STATUSES)}")
    stype = data.get("system_type")
    if "system_type" in data and stype not in SYSTEM_TYPES:
        problems.append(f"system_type: {stype!r} is not one of {', '.join(SYSTEM_TYPES)}")
    if "submitter" in data and data["submitter"] != submitter:
        problems.append(
            f"submitter: {data['submitter']!r} differs from the submission's {submitter!r} (the checker compares it "
            "with the submitter folder); leave it out or pass the same --submitter"
        )
    if "division" in data and data["division"] != division:
        problems.append(
            f"division: {data['division']!r} differs from the submission's {division!r}; leave it out or pass the "
            "same --division"
        )
    network = data.get("is_network")
    if division == "closed" and network is not None and str(network).lower() != "false":
        problems.append(f'is_network: {network!r}; the closed division needs it absent or "false"')
    problems += _under(OWN_KEY, hardware_problems(data.get(OWN_KEY)))
    hw = data.get(OWN_KEY)
    nodes, per_node = _count(data.get("number_of_nodes")), _count(data.get("accelerators_per_node"))
    count = hw.get("accelerator_count") if isinstance(hw, Mapping) else None
    if nodes is not None and per_node is not None and isinstance(count, int) and nodes * per_node != count:
        problems.append(
            f"{OWN_KEY}.accelerator_count: {count} differs from number_of_nodes x accelerators_per_node = "
            f"{nodes} x {per_node} = {nodes * per_node}; make them agree"
        )
    return problems


def _under(key: str, problems: list[str]) -> list[str]:
    """Problems of a nested mapping, named by their dotted key (`trajbench.power_watts: …`);
    one about the mapping itself (`missing or not a mapping`) names the mapping."""
    return [f"{key}: {p}" if p.startswith("missing or not a mapping") else f"{key}.{p}" for p in problems]


def hardware_problems(own: Any) -> list[str]:
    """The problems of the `trajbench` mapping, each `KEY: rule; fix`."""
    if not isinstance(own, Mapping):
        example = ", ".join(f"{k}: {eg}" for k, (_, eg) in HARDWARE_FIELDS.items())
        return [f"missing or not a mapping; add {OWN_KEY}: {{{example}}}"]
    problems: list[str] = []
    for key, (rule, eg) in HARDWARE_FIELDS.items():
        if key not in own:
            problems.append(f"{key}: missing; add it ({rule}), e.g. {key}: {eg}")
    for key in own:
        if key not in HARDWARE_FIELDS:
            problems.append(f"{key}: unknown key; remove it (the keys are {', '.join(HARDWARE_FIELDS)})")
    kind = own.get("accelerator_type")
    if "accelerator_type" in own and not (isinstance(kind, str) and kind.strip() and not _placeholder(kind)):
        problems.append(f"accelerator_type: must be {HARDWARE_FIELDS['accelerator_type'][0]}, got {kind!r}")
    n = own.get("accelerator_count")
    if "accelerator_count" in own and not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        problems.append(f"accelerator_count: must be {HARDWARE_FIELDS['accelerator_count'][0]}, got {n!r}")
    for key in ("price_per_hour_usd", "power_watts"):
        v = own.get(key)
        if key in own and v is not None and not (_is_value(v) and not isinstance(v, str) and v > 0):
            problems.append(f"{key}: must be {HARDWARE_FIELDS[key][0]}, got {v!r}")
    return problems


def measurement_problems(data: Any) -> list[str]:
    """The problems of a measurements mapping, each `KEY: rule; fix`."""
    if not isinstance(data, Mapping):
        return [f"missing or not a mapping; add the fields {', '.join(MEASUREMENT_FIELDS)}"]
    problems: list[str] = []
    for key in MEASUREMENT_FIELDS:
        v = data.get(key)
        if key not in data:
            problems.append(f"{key}: missing; add it (the MLPerf checker requires it, non-empty)")
        elif not (isinstance(v, str) and v.strip()):
            problems.append(f"{key}: must be a non-empty string, got {v!r}")
        elif _placeholder(v):
            problems.append(f"{key}: {v!r} is a template placeholder; replace it with the model's answer")
    for key in data:
        if key not in MEASUREMENT_FIELDS:
            problems.append(f"{key}: unknown key; remove it (the fields are {', '.join(MEASUREMENT_FIELDS)})")
    return problems


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalError(f"--system-file {path}: no such file; check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"--system-file {path}: cannot read it ({exc})") from None
    if path.suffix.lower() not in SUFFIXES:
        raise EvalError(f"--system-file {path}: a system file is .yaml, .yml or .json; rename it")
    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EvalError(f"{path}: not valid {kind} ({first}); fix the syntax (docs/submission.md)") from None


def read_system_file(path: str | Path, *, submitter: str, division: str) -> tuple[SystemDescription, Measurements]:
    """The checked system description and measurements of `--system-file`; every problem of the
    file at once, one per line, in the error."""
    p = Path(path)
    data = _load(p)
    if not isinstance(data, Mapping):
        raise EvalError(
            f"{p}: must be a mapping of the system fields, `{MEASUREMENTS_KEY}` and `{OWN_KEY}` (docs/submission.md)"
        )
    flat = {k: v for k, v in data.items() if k != MEASUREMENTS_KEY}
    flat.setdefault("submitter", submitter)
    flat.setdefault("division", division)
    problems = system_problems(flat, submitter=submitter, division=division)
    problems += _under(MEASUREMENTS_KEY, measurement_problems(data.get(MEASUREMENTS_KEY)))
    if problems:
        lines = "\n".join(f"{p}: {q}" for q in problems)
        raise EvalError(f"{len(problems)} problem(s) in the system file (docs/submission.md):\n{lines}")
    hardware = traces.from_json(Hardware, dict(flat[OWN_KEY]), str(p))
    values = {k: v for k, v in flat.items() if k != OWN_KEY}
    return SystemDescription(values, hardware), traces.from_json(Measurements, dict(data[MEASUREMENTS_KEY]), str(p))
