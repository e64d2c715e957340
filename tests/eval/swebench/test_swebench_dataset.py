"""Loading SWE-bench instances from local files (no extra needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from toy import instance, write_jsonl

from eval import EvalError
from eval.swebench import SwebenchError, load_instances


def _rows(n: int) -> list[dict[str, Any]]:
    return [instance(f"toy__calc-{k}", "fix", "0" * 40) for k in range(1, n + 1)]


def test_first_n_in_dataset_order_from_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "verified.jsonl", _rows(5))
    got = load_instances(path, 3)
    assert [r["instance_id"] for r in got] == ["toy__calc-1", "toy__calc-2", "toy__calc-3"]


def test_parquet_file_and_hub_style_folder(tmp_path: Path) -> None:
    rows = _rows(4)
    folder = tmp_path / "SWE-bench_Verified" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "test-00000-of-00001.parquet")
    assert [r["instance_id"] for r in load_instances(folder / "test-00000-of-00001.parquet", 4)] == [
        r["instance_id"] for r in rows
    ]
    assert load_instances(tmp_path / "SWE-bench_Verified", 2)[1]["instance_id"] == "toy__calc-2"


def test_missing_file_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(SwebenchError, match=r"not found: .*pass --dataset with a local Parquet or JSONL copy") as exc:
        load_instances(tmp_path / "nope.parquet", 200)
    assert isinstance(exc.value, EvalError)


def test_too_few_rows(tmp_path: Path) -> None:
    with pytest.raises(SwebenchError, match=r"holds 2 instances, but 200 were asked for \(--instances\)"):
        load_instances(write_jsonl(tmp_path / "v.jsonl", _rows(2)), 200)


def test_missing_harness_column_is_named(tmp_path: Path) -> None:
    rows = _rows(2)
    del rows[1]["eval_script"]
    with pytest.raises(SwebenchError, match=r"instance toy__calc-2 \(row 2\) lacks eval_script"):
        load_instances(write_jsonl(tmp_path / "v.jsonl", rows), 2)


def test_empty_pass_to_pass_is_fine_and_bad_json_line_is_located(tmp_path: Path) -> None:
    rows = _rows(1)
    rows[0]["PASS_TO_PASS"] = "[]"
    assert load_instances(write_jsonl(tmp_path / "v.jsonl", rows), 1)[0]["PASS_TO_PASS"] == "[]"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n{oops\n")
    with pytest.raises(SwebenchError, match=r"bad.jsonl:2: not valid JSON"):
        load_instances(bad, 2)


def test_duplicate_ids_rejected(tmp_path: Path) -> None:
    rows = _rows(1) * 2
    with pytest.raises(SwebenchError, match=r"toy__calc-1 appears twice \(row 2\)"):
        load_instances(write_jsonl(tmp_path / "v.jsonl", rows), 2)


def test_a_dataset_line_without_end_is_an_error_not_a_hang(tmp_path: Path) -> None:
    endless = tmp_path / "verified.jsonl"
    endless.symlink_to("/dev/zero")
    with pytest.raises(SwebenchError, match=r"verified.jsonl:1: no newline in the first 1,073,741,824 bytes"):
        load_instances(endless, 1)
