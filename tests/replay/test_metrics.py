"""SPEC §8 metrics over hand-made records with known answers, and the result files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from replay.metrics import PERCENTILES, compute, distribution
from replay.records import Record, RecordWriter
from replay.summary import REPORT_FILE, SUMMARY_FILE, write_results

S = 1_000_000_000  # ns per second


def rec(instance: str, turn: int, send: float, first: float | None, last: float | None, *, out: int | None = None, client_out: int | None = None,
        prompt: int | None = 100, client_prompt: int | None = None, cached: int | None = None, error: str | None = None,
        in_window: bool = True, chunks: tuple[float, ...] = (), finish: str | None = "stop") -> Record:
    return Record(
        instance_id=instance, trajectory_id=instance.split("__")[0], repeat=1, turn=turn, client_turn_index=turn // 2, slot=0, worker=0,
        prompt_sha256="x", salt_repeat="4461", salt_conversation="abcd", t_send_ns=int(send * S),
        t_first_ns=None if first is None else int(first * S), t_last_ns=None if last is None else int(last * S),
        chunk_ns=tuple(int(c * S) for c in chunks), delay_s=0.0, in_window=in_window, content="", reasoning="", tool_calls=(),
        finish_reason=None if error else finish, prompt_tokens=None if error else prompt, completion_tokens=None if error else out,
        cached_tokens=cached, client_prompt_tokens=client_prompt, client_output_tokens=client_out,
        http_status=None if error else 200, error_kind=error, error_message=error,
    )


RECORDS = [
    rec("A", 1, 0.0, 0.1, 1.0, out=11, client_out=12, client_prompt=98, cached=40, chunks=(0.1, 0.4, 1.0)),
    rec("B", 1, 0.5, 0.6, 1.5, out=None, client_out=4, prompt=None, finish="length"),
    rec("A", 3, 2.0, 2.2, 3.0, out=5, cached=60),
    rec("C", 1, 1.0, None, 1.2, error="http"),
    rec("C", 3, 1.2, None, None, error="aborted"),
    rec("B", 3, 3.5, 3.6, 9.0, out=50, in_window=False),  # the tail: issued after the close
]


def test_distribution_takes_observed_values_with_the_lower_method() -> None:
    values = list(range(10, 0, -1))  # 10..1, unsorted on purpose
    d = distribution(values)
    assert [d["percentiles"][k] for k in ("99.9", "99", "50", "25", "1")] == [9.0, 9.0, 5.0, 3.0, 1.0]
    assert all(v in values for v in d["percentiles"].values())
    assert list(d["percentiles"]) == ["99.9", "99", "97", "95", "90", "80", "75", "50", "25", "10", "5", "1"]
    assert (d["n"], d["min"], d["max"], d["avg"], d["total"]) == (10, 1.0, 10.0, 5.5, 55.0)
    assert d["std_dev"] == pytest.approx(float(np.std(values, ddof=1)))
    empty = distribution([])
    assert empty["n"] == 0 and empty["avg"] is None and set(empty["percentiles"]) == {f"{p:g}" for p in PERCENTILES}


def test_counts_keep_failures_and_aborted_turns_apart() -> None:
    m = compute(RECORDS, window_close_ns=3 * S)
    assert (m["n_samples_issued"], m["n_samples_completed"], m["n_samples_failed"], m["n_samples_aborted"]) == (5, 4, 1, 1)
    assert (m["n_window_samples"], m["n_window_completed"], m["n_window_failed"]) == (4, 3, 1)
    assert m["errors_by_kind"] == {"aborted": 1, "http": 1}
    assert m["finish_reason_counts"] == {"length": 1, "stop": 2}
    assert m["all_turns"] == {"output_tokens": 70, "completed": 4, "out_of_window": 1}


def test_throughput_and_per_user_speed_over_the_window() -> None:
    m = compute(RECORDS, window_close_ns=3 * S)
    assert m["window"] == {"start_ns": 0, "close_ns": 3 * S, "end_ns": 3 * S, "closed": True}
    assert m["duration_ns"] == 3 * S  # last completion of window turns − first send
    assert m["tps"] == pytest.approx((11 + 4 + 5) / 3)  # B's turn 1 counted by the client tokenizer
    assert m["qps"] == pytest.approx(1.0)
    inter = m["interactivity"]
    assert (inter["output_tokens_sum"], inter["e2e_seconds_sum"]) == (20, pytest.approx(1.0 + 1.0 + 1.0))
    assert inter["e2e_interactivity"] == pytest.approx(20 / 3)
    assert sorted(inter["per_trajectory"]["percentiles"].values())[0] == pytest.approx(4.0)  # B: 4 tok / 1 s
    assert inter["per_trajectory"]["max"] == pytest.approx(8.0)  # A: 16 tok / 2 s
    assert inter["per_turn"]["n"] == 3


def test_latencies_exclude_failures_and_the_tail() -> None:
    m = compute(RECORDS, window_close_ns=3 * S)
    assert m["ttft"]["n"] == 3 and m["ttft"]["max"] == pytest.approx(0.2 * S)
    assert m["latency"]["total"] == pytest.approx(3 * S)
    assert sorted([m["tpot"]["min"], m["tpot"]["max"]]) == [pytest.approx(0.09 * S), pytest.approx(0.3 * S)]  # A1 0.9/10, B1 0.9/3
    assert m["itl"]["n"] == 2 and m["itl"]["total"] == pytest.approx(0.9 * S)


def test_token_sources_difference_and_cache_hits() -> None:
    m = compute(RECORDS, window_close_ns=3 * S)
    t = m["tokens"]
    assert (t["output_from_server"], t["output_from_client"], t["output_unknown"]) == (2, 1, 0)
    assert t["output_client_minus_server"]["total"] == 1  # A1: 12 − 11
    assert t["input_client_minus_server"]["total"] == -2
    c = m["cached_tokens"]
    assert (c["turns_reporting"], c["cached_tokens_sum"], c["prompt_tokens_sum"], c["hit_rate"]) == (2, 100, 200, 0.5)
    assert m["input_sequence_lengths"]["n"] == 2  # B1's server sent no usage and no client count exists


def test_an_unclosed_window_counts_every_turn() -> None:
    recs = [rec("A", 1, 0.0, 0.1, 1.0, out=3)]
    m = compute(recs)
    assert m["window"]["closed"] is False and m["duration_ns"] == S and m["tps"] == pytest.approx(3.0)


def test_result_files_hold_the_reference_keys_and_a_readable_report(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"profile": "kimi-k3", "concurrency": 2, "target": "simulated"}))
    with RecordWriter(tmp_path) as w:
        for r in RECORDS:
            w.write(r)
    summary = write_results(tmp_path, window_close_ns=3 * S)
    on_disk: dict[str, Any] = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert on_disk["run_config"]["profile"] == "kimi-k3"
    for key in ("n_samples_issued", "n_samples_completed", "n_samples_failed", "duration_ns", "ttft", "tpot", "latency",
                "input_sequence_lengths", "output_sequence_lengths", "qps", "tps", "finish_reason_counts", "run_config"):
        assert key in on_disk
    report = (tmp_path / REPORT_FILE).read_text()
    assert "system throughput     6.7 output tok/s" in report
    assert "20 tokens / 3.00 s of E2E" in report
    assert "errors        aborted 1, http 1" in report
