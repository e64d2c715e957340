"""Metrics over hand-made records with known answers: the reference's keys with the reference's
meanings, trajbench's own breakdown beside them, and the result files."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from metricrecords import RECORDS, S, rec
from runfolders import run_info

from replay import Slo
from replay.client import Connections
from replay.results import REPORT_FILE, SUMMARY_FILE
from replay.results.metrics import reference_metrics, trajbench_metrics
from replay.results.records import RecordWriter, tokens_after_first, tpot_ns
from replay.results.rollup import rollup
from replay.results.summary import OURS, build_summary, write_results
from traces import PERCENTILES, distribution, to_json

GOLDEN = Path(__file__).parents[1] / "data" / "result_summary.shape.json"


def test_distribution_takes_observed_values_with_the_lower_method() -> None:
    values = list(range(10, 0, -1))  # 10..1, unsorted on purpose
    d = to_json(distribution(values))
    assert [d["percentiles"][k] for k in ("99.9", "99.0", "50.0", "25.0", "1.0")] == [9.0, 9.0, 5.0, 3.0, 1.0]
    assert all(v in values for v in d["percentiles"].values())
    assert list(d["percentiles"]) == [
        "99.9",
        "99.0",
        "97.0",
        "95.0",
        "90.0",
        "80.0",
        "75.0",
        "50.0",
        "25.0",
        "10.0",
        "5.0",
        "1.0",
    ]
    assert (d["n"], d["min"], d["max"], d["avg"], d["total"]) == (10, 1.0, 10.0, 5.5, 55.0)
    assert d["std_dev"] == pytest.approx(float(np.std(values, ddof=1)))
    empty = to_json(distribution([]))
    assert (
        empty["n"] == 0 and empty["avg"] is None and set(empty["percentiles"]) == {str(float(p)) for p in PERCENTILES}
    )


def test_rollup_has_the_reference_shape() -> None:
    r = rollup([30, 10, 20, 40], early_stopping=True)
    assert list(r) == [
        "total",
        "min",
        "max",
        "median",
        "avg",
        "std_dev",
        "percentiles",
        "early_stopping_percentiles",
        "histogram",
    ]
    assert (r["total"], r["min"], r["max"], r["median"], r["avg"]) == (100, 10, 40, 20.0, 25.0)
    assert isinstance(r["total"], int) and isinstance(r["min"], int)
    assert r["std_dev"] == pytest.approx(float(np.std([10, 20, 30, 40], ddof=1)))
    # early stopping: estimates from the median up, none for 4 samples (too few to certify)
    assert list(r["early_stopping_percentiles"]) == ["99.9", "99.0", "97.0", "95.0", "90.0", "80.0", "75.0", "50.0"]
    assert set(r["early_stopping_percentiles"].values()) == {None}
    h = r["histogram"]
    assert len(h["buckets"]) == len(h["counts"]) == 30 and sum(h["counts"]) == 4
    assert h["buckets"][0][0] == pytest.approx(10.0) and h["buckets"][-1][1] == pytest.approx(
        100.0
    )  # [min, max(max, 10·min)]
    assert rollup([]) == {} and rollup([], early_stopping=True) == {
        "early_stopping_percentiles": {k: None for k in r["early_stopping_percentiles"]}
    }


def test_early_stopping_bound_is_an_observed_value_above_the_percentile() -> None:
    values = list(range(1, 1001))
    es = rollup(values, early_stopping=True)["early_stopping_percentiles"]
    assert es["99.9"] is None  # 1,000 samples cannot certify p99.9 at 99 % confidence
    assert es["50.0"] is not None and 500 < es["50.0"] < 600 and es["50.0"] in values
    assert es["90.0"] >= rollup(values)["percentiles"]["90.0"]


def test_reference_counts_tracked_turns_with_aborted_issued_and_failed_completed() -> None:
    m = to_json(reference_metrics(RECORDS, window_close_ns=3 * S))
    # tracked = the five in-window records: the aborted one was issued, both failures completed
    assert (m["n_samples_issued"], m["n_samples_completed"], m["n_samples_failed"]) == (5, 5, 2)
    assert m["duration_ns"] == 3 * S and m["qps"] == pytest.approx(5 / 3)
    # latency: every completed tracked turn, a failure's time to the error, an abort's 0
    assert sorted(round(v / S, 3) for v in [m["latency"]["min"], m["latency"]["max"]]) == [0.0, 1.0]
    assert m["latency"]["total"] == int(3.2 * S)
    assert m["ttft"]["total"] == int(0.4 * S) and "early_stopping_percentiles" in m["ttft"]
    assert m["finish_reason_counts"] == {
        "stop": 2,
        "length": 1,
        "tool_calls": 0,
        "content_filter": 0,
        "function_call": 0,
        "other": 0,
    }
    assert m["legacy_loadgen_window_duration_ns"] is None


def test_reference_token_counts_use_the_client_tokenizer_when_the_run_had_one() -> None:
    m = to_json(reference_metrics(RECORDS, window_close_ns=3 * S))
    assert m["output_sequence_lengths"]["total"] == 16  # client counts of A1 and B1; A3 has none
    assert m["tps"] == pytest.approx(16 / 3)
    assert m["input_sequence_lengths"]["total"] == 98


def test_reference_token_keys_stay_empty_without_a_tokenizer() -> None:
    """The reference counts tokens with its tokenizer only: without one its token keys are empty
    (`{}`, tps null), whatever the server's usage says; trajbench's own keys carry the usage."""
    server_only = [rec("A", 1, 0.0, 0.1, 1.0, out=7), rec("A", 3, 1.0, 1.1, 2.0, out=9)]
    m = to_json(reference_metrics(server_only))
    assert (m["output_sequence_lengths"], m["input_sequence_lengths"], m["tps"]) == ({}, {}, None)
    assert m["tpot"] == {"early_stopping_percentiles": {k: None for k in m["ttft"]["early_stopping_percentiles"]}}
    assert m["qps"] == pytest.approx(1.0) and m["latency"]["total"] == 2 * S  # time-based keys are unaffected
    ours = to_json(trajbench_metrics(server_only))
    assert ours["output_sequence_lengths"]["total"] == 16 and ours["input_sequence_lengths"]["total"] == 200
    assert ours["token_method"] == {"input": None, "output": None}
    # shard ISL counts without a run tokenizer (run.json says none): still empty, as the reference's
    with_isl = [rec("A", 1, 0.0, 0.1, 1.0, out=7, client_prompt=90)]
    assert to_json(reference_metrics(with_isl, tokenizer=False))["input_sequence_lengths"] == {}
    assert to_json(reference_metrics(with_isl, tokenizer=True))["input_sequence_lengths"]["total"] == 90


def test_partial_turns_are_completed_samples_under_the_reference_keys() -> None:
    """A turn whose response started but broke (or carried an error object, a malformed line,
    nothing) is a completed, non-failed sample to the reference, on what arrived; trajbench's
    own keys count it as partial by kind and keep it out of their distributions."""
    recs = [
        rec("A", 1, 0.0, 0.1, 1.0, out=5, client_out=5, after_first=4),
        rec("B", 1, 0.0, 0.2, 0.8, client_out=3, after_first=2, error="stream", finish=None),
        rec("C", 1, 0.0, None, 0.3, error="empty", finish=None),
        rec("D", 1, 0.0, None, 0.5, error="http"),
        rec("D", 3, 0.5, None, None, error="aborted"),
    ]
    recs[1] = replace(recs[1], http_status=200)
    m = to_json(reference_metrics(recs, tokenizer=True))
    assert (m["n_samples_issued"], m["n_samples_completed"], m["n_samples_failed"]) == (5, 5, 2)
    assert m["output_sequence_lengths"]["total"] == 8  # A and the partial B; the empty C has no output
    assert m["ttft"]["total"] == int(0.3 * S)  # A and B: the empty turn had no first chunk
    assert m["latency"]["total"] == int((1.0 + 0.8 + 0.3 + 0.5 + 0.0) * S)
    assert m["tpot"]["total"] == pytest.approx(0.9 * S / 4 + 0.6 * S / 2)  # A and the partial B
    ours = to_json(trajbench_metrics(recs))
    assert {k: ours["turns"][k] for k in ("sent", "ok", "failed", "partial", "partial_by_kind", "aborted")} == {
        "sent": 4,
        "ok": 1,
        "failed": 1,
        "partial": 2,
        "partial_by_kind": {"empty": 1, "stream": 1},
        "aborted": 1,
    }
    assert ours["ttft"]["n"] == 1 and ours["latency"]["n"] == 1  # ok turns only
    assert ours["per_trajectory"]["failed"] == 1  # D: a failure ended it; B and C went on


def test_a_cancelled_turn_was_issued_but_never_completed() -> None:
    recs = [rec("A", 1, 0.0, 0.1, 1.0, out=3), rec("B", 1, 0.5, 0.6, None, error="cancelled")]
    m = to_json(reference_metrics(recs))
    assert (m["n_samples_issued"], m["n_samples_completed"], m["n_samples_failed"]) == (2, 1, 0)


def test_tpot_divides_by_the_tokens_after_the_first_chunk() -> None:
    # 4 tokens in the first chunk (MTP): E2E − TTFT = 0.9 s over 12 tokens after it, not 15
    exact = rec("A", 1, 0.0, 0.1, 1.0, out=16, content="x" * 16, first_chars=4, after_first=12)
    assert tpot_ns(exact) == pytest.approx(0.9 * S / 12)
    assert tokens_after_first(exact) == (12.0, "client")
    # without a client tokenizer: the server's count less the first chunk's share of the characters
    prorated = rec("A", 1, 0.0, 0.1, 1.0, out=16, content="x" * 16, first_chars=4)
    assert tokens_after_first(prorated) == (12.0, "prorated") and tpot_ns(prorated) == pytest.approx(0.9 * S / 12)
    one_chunk = rec("A", 1, 0.0, 0.1, 0.1, out=3, content="abc", first_chars=3)
    assert tpot_ns(one_chunk) is None
    m = to_json(reference_metrics([exact]))
    assert m["tpot"]["total"] == pytest.approx(0.9 * S / 12)
    ours = to_json(trajbench_metrics([exact, prorated]))
    assert ours["tpot"]["n"] == 2 and ours["tpot_denominator"] == {"client": 1, "prorated": 1}


def test_trajbench_breakdown_keeps_failures_and_aborted_turns_apart() -> None:
    m = to_json(trajbench_metrics(RECORDS, window_close_ns=3 * S))
    assert m["turns"] == {
        "sent": 5,
        "ok": 4,
        "failed": 1,
        "aborted": 1,
        "cancelled": 0,
        "partial": 0,
        "partial_by_kind": {},
        "dropped_reasoning_chars": 0,
        "dropped_reasoning_turns": 0,
        "window": {
            "sent": 4,
            "ok": 3,
            "failed": 1,
            "aborted": 1,
            "cancelled": 0,
            "partial": 0,
            "partial_by_kind": {},
            "dropped_reasoning_chars": 0,
            "dropped_reasoning_turns": 0,
        },
    }
    assert m["errors_by_kind"] == {"aborted": 1, "http": 1}
    assert m["finish_reasons"] == {"length": 1, "stop": 2}
    assert m["all_turns"] == {"output_tokens": 71, "completed": 4, "out_of_window": 1}  # A1 by the client: 12


def test_throughput_and_per_user_speed_over_the_window() -> None:
    m = to_json(trajbench_metrics(RECORDS, window_close_ns=3 * S))
    assert m["window"] == {"start_ns": 0, "close_ns": 3 * S, "end_ns": 3 * S, "closed": True, "duration_ns": 3 * S}
    # A1 and B1 counted by the client (A1's usage says 11, its client count 12: the client's count wins)
    assert m["throughput"]["output_tokens_per_s"] == pytest.approx((12 + 4 + 5) / 3)
    assert m["throughput"]["requests_per_s"] == pytest.approx(1.0)
    inter = m["interactivity"]
    assert (inter["output_tokens_sum"], inter["e2e_seconds_sum"]) == (21, pytest.approx(1.0 + 1.0 + 1.0))
    assert inter["e2e_interactivity"] == pytest.approx(21 / 3)
    assert sorted(inter["per_trajectory"]["percentiles"].values())[0] == pytest.approx(4.0)  # B: 4 tok / 1 s
    assert inter["per_trajectory"]["max"] == pytest.approx(8.5)  # A: 17 tok / 2 s
    assert inter["per_turn"]["n"] == 3


def test_trajbench_latencies_exclude_failures_and_the_tail() -> None:
    m = to_json(trajbench_metrics(RECORDS, window_close_ns=3 * S))
    assert m["ttft"]["n"] == 3 and m["ttft"]["max"] == pytest.approx(0.2 * S)
    assert m["latency"]["total"] == pytest.approx(3 * S)
    assert m["itl"]["n"] == 2 and m["itl"]["total"] == pytest.approx(0.9 * S)


def test_token_sources_difference_and_cache_hits() -> None:
    m = to_json(trajbench_metrics(RECORDS, window_close_ns=3 * S))
    t = m["tokens"]
    assert (t["output_from_server"], t["output_from_client"], t["output_unknown"]) == (1, 2, 0)  # A3 by usage
    assert t["output_client_minus_server"]["total"] == 1  # A1: 12 − 11
    assert t["input_client_minus_server"]["total"] == -2
    c = m["cached_tokens"]
    assert (c["turns_reporting"], c["cached_tokens_sum"], c["prompt_tokens_sum"], c["hit_rate"]) == (2, 100, 200, 0.5)
    assert m["input_sequence_lengths"]["n"] == 2  # B1's server sent no usage and no client count exists
    assert m["token_method"] == {"input": "client", "output": "client"}


def test_an_unclosed_window_counts_every_turn() -> None:
    m = to_json(trajbench_metrics([rec("A", 1, 0.0, 0.1, 1.0, out=3)]))
    assert m["window"]["closed"] is False and m["window"]["duration_ns"] == S
    assert m["throughput"]["output_tokens_per_s"] == pytest.approx(3.0)


def _shape(value: Any) -> Any:
    """The structure of a JSON value with every leaf replaced by its type (lists by their first
    element's shape): what a reader of the file relies on."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def test_result_summary_matches_the_golden_shape(tmp_path: Path) -> None:
    """The file's key set, key order and value types are pinned by a golden file: the reference's
    top-level keys in its order (its Report reader needs all of them), its metric dicts, then
    trajbench's section. TRAJBENCH_UPDATE_GOLDEN=1 rewrites the golden file."""
    run = {"profile": "kimi-k3", "concurrency": 2, "target": "simulated", "started_monotonic_ns": 123}
    records = [*RECORDS, rec("D", 1, 0.2, 0.3, 1.1, out=9, client_out=9, content="abc", first_chars=1, after_first=6)]
    conns = Connections(prewarmed=2, prewarm_failed=0, opened_in_run=1, reconnects=1, expired=0, kept_alive=True)
    slo = Slo(ttft_ms=500.0, tpot_ms=None, session_s=2.0)  # goodput's section is part of the shape
    summary = json.loads(build_summary(records, run, window_close_ns=3 * S, connections=conns, slo=slo).text())
    shape = _shape(summary)
    if os.environ.get("TRAJBENCH_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(shape, indent=1) + "\n")
    assert shape == json.loads(GOLDEN.read_text())
    reference_keys = [
        "version",
        "git_sha",
        "test_started_at",
        "n_samples_issued",
        "n_samples_completed",
        "n_samples_failed",
        "duration_ns",
        "state",
        "complete",
        "ttft",
        "tpot",
        "latency",
        "output_sequence_lengths",
        "input_sequence_lengths",
        "legacy_loadgen_window_duration_ns",
        "qps",
        "tps",
        "finish_reason_counts",
        "run_config",
    ]
    assert list(summary) == [*reference_keys, OURS]
    assert (summary["state"], summary["complete"], summary["test_started_at"]) == ("complete", True, 123)
    for metric in ("ttft", "tpot", "latency", "output_sequence_lengths", "input_sequence_lengths"):
        assert "median" in summary[metric] and summary[metric]["percentiles"]["50.0"] == summary[metric]["median"]
        assert set(summary[metric]["histogram"]) == {"buckets", "counts"}
    assert ("early_stopping_percentiles" in summary["tpot"]) and "early_stopping_percentiles" not in summary[
        "input_sequence_lengths"
    ]
    interrupted = build_summary(records, run, interrupted=True).to_json()
    assert (interrupted["state"], interrupted["complete"]) == ("interrupted", False)


def test_result_files_and_a_readable_report(tmp_path: Path) -> None:
    run_info(profile="kimi-k3", concurrency=2, target="simulated").write(tmp_path)
    with RecordWriter(tmp_path) as w:
        for r in RECORDS:
            w.write(r)
    summary = write_results(tmp_path, window_close_ns=3 * S)
    on_disk: dict[str, Any] = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert on_disk == json.loads(summary.text())
    assert on_disk["run_config"] == {  # the reference's fields, nothing of trajbench's (run.json holds those)
        "load_pattern": {"type": "agentic_inference", "target_qps": None, "target_concurrency": 2},
        "warmup": {"enabled": False, "n_requests": None, "salt": False, "drain": False, "warmup_random_seed": 42},
        "scheduler_random_seed": 42,
        "dataloader_random_seed": 42,
    }
    assert SUMMARY_FILE == "performance/result_summary.json"  # where the reference's readers look
    report = (tmp_path / REPORT_FILE).read_text()
    assert "system throughput     7.0 output tok/s" in report
    assert "21 tokens / 3.00 s of E2E" in report
    assert "errors        aborted 1, http 1" in report
    assert "reference   issued 5, completed 5, failed 2" in report
    assert max(len(line) for line in report.splitlines()) <= 80  # a terminal's width, or a pasted issue's
