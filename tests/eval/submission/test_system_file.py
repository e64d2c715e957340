"""`--system-file`: every problem of the submitter's system description at once, as
`FILE: KEY: rule; fix`, before anything is written (docs/submission.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from subtrees import SYSTEM, system_file

from eval import EvalError, submit
from eval.submission import read_system_file


def _problems(path: Path, **kw: str) -> list[str]:
    with pytest.raises(EvalError) as exc:
        read_system_file(path, submitter=kw.get("submitter", "Acme"), division=kw.get("division", "closed"))
    head, *lines = str(exc.value).splitlines()
    assert head == f"{len(lines)} problem(s) in the system file (docs/submission.md):"
    assert all(line.startswith(f"{path}: ") for line in lines)
    return [line[len(f"{path}: ") :] for line in lines]


def test_a_complete_description_reads_back(tmp_path: Path) -> None:
    desc, measurements = read_system_file(system_file(tmp_path), submitter="Acme", division="closed")
    assert desc.values["submitter"] == "Acme" and desc.values["division"] == "closed"
    assert desc.hardware.accelerator_count == 8 and desc.hardware.price_per_hour_usd == 98.32
    assert measurements.retraining == "no"
    as_json = tmp_path / "box.json"
    as_json.write_text(json.dumps(SYSTEM))
    assert read_system_file(as_json, submitter="Acme", division="closed")[0].hardware == desc.hardware


def test_every_problem_is_named_with_its_key_and_fix(tmp_path: Path) -> None:
    path = system_file(
        tmp_path,
        cooling=None,  # missing
        framework="TODO: e.g. vLLM",
        status="released",
        system_type="cloud",
        submitter="Other",
        is_network="true",
        host_memory_capacity="",
        measurements={**SYSTEM["measurements"], "weight_data_types": "TODO: e.g. int4", "retraining": None},
        trajbench={"accelerator_type": "H100", "accelerator_count": 4, "price_per_hour_usd": -1, "watts": 1},
    )
    assert _problems(path) == [
        "host_memory_capacity: empty; the MLPerf checker wants a meaningful answer here",
        "cooling: missing; add it (the MLPerf checker requires every system field)",
        "framework: 'TODO: e.g. vLLM' is a template placeholder; replace it with the system's answer",
        "status: 'released' is not one of available, preview, rdi",
        "system_type: 'cloud' is not one of datacenter, edge, datacenter,edge, edge,datacenter",
        "submitter: 'Other' differs from the submission's 'Acme' (the checker compares it with the submitter "
        "folder); leave it out or pass the same --submitter",
        "is_network: 'true'; the closed division needs it absent or \"false\"",
        "trajbench.power_watts: missing; add it (a number > 0 (W for the whole system under load), or null if not "
        "disclosed), e.g. power_watts: 5600",
        "trajbench.watts: unknown key; remove it (the keys are accelerator_type, accelerator_count, "
        "price_per_hour_usd, power_watts)",
        "trajbench.price_per_hour_usd: must be a number > 0 (USD per hour for the whole system), or null if not "
        "disclosed, got -1",
        "trajbench.accelerator_count: 4 differs from number_of_nodes x accelerators_per_node = 1 x 8 = 8; make them "
        "agree",
        "measurements.weight_data_types: 'TODO: e.g. int4' is a template placeholder; replace it with the model's "
        "answer",
        "measurements.retraining: must be a non-empty string, got None",
    ]


def test_missing_blocks_and_unreadable_files(tmp_path: Path) -> None:
    path = system_file(tmp_path, measurements=None, trajbench=None)
    assert _problems(path) == [
        'trajbench: missing or not a mapping; add trajbench: {accelerator_type: "H100-SXM-80GB", '
        "accelerator_count: 8, price_per_hour_usd: 98.32, power_watts: 5600}",
        "measurements: missing or not a mapping; add the fields starting_weights_filename, weight_data_types, "
        "input_data_types, retraining, weight_transformations",
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("status: [available\n")
    with pytest.raises(EvalError, match=r"bad.yaml: not valid YAML \(.*\); fix the syntax"):
        read_system_file(bad, submitter="Acme", division="closed")
    with pytest.raises(EvalError, match="no such file; check the path"):
        read_system_file(tmp_path / "none.yaml", submitter="Acme", division="closed")
    txt = tmp_path / "box.txt"
    txt.write_text("{}")
    with pytest.raises(EvalError, match=r"a system file is \.yaml, \.yml or \.json; rename it"):
        read_system_file(txt, submitter="Acme", division="closed")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n")
    with pytest.raises(EvalError, match="must be a mapping of the system fields"):
        read_system_file(listed, submitter="Acme", division="closed")


def test_submit_checks_the_system_file_before_it_reads_a_run(tmp_path: Path) -> None:
    path = system_file(tmp_path, status="TODO: available|preview|rdi")
    with pytest.raises(EvalError, match=re.escape("status: 'TODO: available|preview|rdi' is a template placeholder")):
        submit([tmp_path / "no-such-sweep"], tmp_path / "tree", submitter="Acme", division="closed", system_file=path)
    assert not (tmp_path / "tree").exists()
