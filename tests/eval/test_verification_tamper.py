"""`eval check` takes nothing a run folder claims on trust (docs/compliance.md). Each way the
held-out audit gamed a point fails the check naming the file and the number, and the untouched
run passes: partial runs (SIGINT, SIGKILL), failed and aborted turns beyond the point's budget,
hand edits (run.json's target, a deleted record, result_summary.json, scores.json, osl.json, the
manifest's counts), two runs on one folder, and a server whose usage is inflated, negative or
absurd. Runs that time anything are real replays against a loopback server."""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import command, interrupt_when, trajbench
from evalruns import finish_run, official_run, perfect, record, write_run
from loopback_server import LoopbackServer, Reply
from tamper import edit_json, edit_manifest, edit_records

import traces
from eval import osl_gate, score_run
from eval.checks import Check
from eval.compliance import check_submission
from replay import SUMMARY_FILE, RunConfig, run_replay
from replay.results import read_records

#: Every check of one point (the submission's SWE-bench check aside).
POINT = (
    "official-profile",
    "target",
    "gates",
    "salt",
    "delays",
    "stop-issuing",
    "trajectories",
    "sampling",
    "inline",
    "osl",
    "dataset",
    "seal",
    "complete",
    "recomputed",
    "failure-budget",
    "client-tokens",
    "cache-exploit",
    "warm-cache",
    "output-consistency",
)
#: The checks a real replay against the loopback server passes (its answers are not the model's:
#: inline and OSL are not judged there).
VERIFIED = ("target", "trajectories", "salt", "seal", "complete", "recomputed", "failure-budget", "client-tokens")


def checks_of(run: Path, shards: Path) -> dict[str, Check]:
    expected = traces.Shards(shards).content_hash
    return {c.check: c for c in check_submission([run], expected_hash=expected) if c.point != "submission"}


def failed(run: Path, shards: Path) -> dict[str, str]:
    return {name: c.reason for name, c in checks_of(run, shards).items() if not c.passed}


@pytest.fixture
def official(tmp_path: Path, sample_shards: Path) -> Path:
    """A point as `replay run` leaves it (sealed), with scores.json and osl.json added after."""
    run = official_run(tmp_path / "c4", sample_shards)
    score_run(run)
    osl_gate(run)
    return run


@pytest.mark.slow
def test_the_untouched_run_passes_every_check(official: Path, sample_shards: Path) -> None:
    checks = checks_of(official, sample_shards)
    assert tuple(checks) == POINT
    assert [c for c in checks.values() if not c.passed] == []
    v = traces.__version__
    assert (
        checks["seal"].reason == f"6 file(s) as sealed by trajbench {v} (eval inline {v}, eval osl {v}, replay run {v})"
    )
    assert checks["recomputed"].reason == (
        f"{SUMMARY_FILE}, scores.json, osl.json: each equal to its recomputation from the records"
    )
    assert checks["complete"].reason == "17 of 17 planned turns recorded once each; the run ended by itself"


# ---------------------------------------------------------------- hand edits


@pytest.mark.slow
def test_run_json_target_edited_from_simulated_to_real(tmp_path: Path, sample_shards: Path) -> None:
    run = official_run(
        tmp_path / "sim", sample_shards, target="simulated", target_evidence="GET /health says simulated"
    )
    edit_json(run, "run.json", lambda d: d.update(target="real"))
    bad = failed(run, sample_shards)
    assert bad["target"] == (
        "run.json says target 'real' but records a simulated one: target_evidence 'GET /health says simulated'; "
        "official points need a real inference server"
    )
    assert bad["seal"].startswith(f"{run}/seal.json: changed since sealed: run.json changed (")
    assert "recomputed" not in bad  # run_config holds the reference's fields; the target is run.json's
    # a thorough editor removes the evidence too: the seal still names the file
    edit_json(run, "run.json", lambda d: d.update(target_evidence=None, simulator=None))
    bad = failed(run, sample_shards)
    assert "target" not in bad and "run.json changed" in bad["seal"]


def test_a_deleted_record_is_named(official: Path, sample_shards: Path) -> None:
    gone = json.loads(next(iter(_lines(official)))[:-1])
    edit_records(official, lambda lines: lines[1:])
    bad = failed(official, sample_shards)
    assert bad["complete"] == (
        f"records.jsonl.zst: 16 of 17 planned turns recorded; without a record: {gone['instance_id']} turn(s) "
        f"{gone['turn']} (1)"
    )
    assert bad["seal"].startswith(f"{official}/seal.json: changed since sealed: records.jsonl.zst changed (")
    assert f"{SUMMARY_FILE}: n_samples_issued stored 17, recomputed 16" in bad["recomputed"]


def _lines(run: Path) -> Iterator[bytes]:
    import zstandard

    data = zstandard.ZstdDecompressor().decompressobj().decompress((run / "records.jsonl.zst").read_bytes())
    yield from data.splitlines(keepends=True)


def test_throughput_times_ten_in_result_summary(official: Path, sample_shards: Path) -> None:
    stored = json.loads((official / SUMMARY_FILE).read_text())
    real = stored["trajbench"]["throughput"]["output_tokens_per_s"]
    edit_json(official, SUMMARY_FILE, lambda d: d["trajbench"]["throughput"].update(output_tokens_per_s=real * 10))
    bad = failed(official, sample_shards)
    assert bad["recomputed"] == (
        f"{SUMMARY_FILE}: trajbench.throughput.output_tokens_per_s stored {real * 10:.6g}, recomputed {real:.6g}"
    )
    assert f"{SUMMARY_FILE} changed" in bad["seal"]


def test_scores_and_osl_edits_are_recomputed(official: Path, sample_shards: Path) -> None:
    edit_json(official, "scores.json", lambda d: d.update(score=0.99))
    edit_json(official, "osl.json", lambda d: d["window"].update(mean=412.5))
    bad = failed(official, sample_shards)
    assert bad["recomputed"] == (
        "scores.json: score stored 0.99, recomputed 1; osl.json: window.mean stored 412.5, recomputed 430"
    )
    assert "osl.json changed" in bad["seal"] and "scores.json changed" in bad["seal"]


def test_manifest_counts_edited_to_pass_a_one_of_n_run(tmp_path: Path, sample_shards: Path) -> None:
    shards = Path(shutil.copytree(sample_shards, tmp_path / "shards"))
    first = next(iter(traces.Shards(shards)))
    records = [record(row, perfect(row), tokens=430, client_tokens=430) for row in first.turns]
    run = write_run(tmp_path / "one", shards, records=records, num_trajectories=1, tokenizer="words", finish=True)
    edit_manifest(shards, lambda m: m["counts"].update(trajectories=1, instances=1))
    bad = failed(run, shards)
    assert bad["trajectories"] == "1 trajectories is not a positive multiple of the dataset size 4"
    checks = checks_of(run, shards)
    assert checks["dataset"].passed  # the counts are outside the content hash: no check reads them
    assert checks["complete"].passed  # one instance planned, one recorded


def test_two_runs_merged_into_one_folder(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(
        tmp_path / "merged",
        sample_shards,
        perfect,
        tokens=lambda row: 430,
        client_tokens=lambda row: 430,
        tokenizer="words",
    )
    plain = run / "records.jsonl"
    plain.write_bytes(plain.read_bytes() * 2)  # the second run appended its records to the first's
    finish_run(run)
    bad = failed(run, sample_shards)
    assert bad["complete"] == "records.jsonl.zst: 17 turn(s) recorded more than once (two runs wrote one folder?)"
    assert "seal" not in bad and "recomputed" not in bad  # sealed and summarised as they were written


# ---------------------------------------------------------------- usage


@pytest.mark.parametrize(
    ("server", "why"),
    [
        (
            lambda n: n * 3 // 2,
            "records.jsonl.zst: mean server usage 645.0 vs client count 430.0 (+50.0 %, limit ±5 %) over 17 turns",
        ),
        (
            lambda n: -n,
            "records.jsonl.zst: server usage that cannot be true on 17 turn(s) (negative 17), e.g. ",
        ),
        (
            lambda n: 100_000,
            "records.jsonl.zst: server usage that cannot be true on 17 turn(s) (absurd 17;",
        ),
    ],
    ids=["inflated", "negative", "absurd"],
)
def test_server_usage_is_cross_checked_against_the_client_count(
    tmp_path: Path, sample_shards: Path, server: Callable[[int], int], why: str
) -> None:
    run = official_run(tmp_path / "r", sample_shards)
    honest = json.loads((run / SUMMARY_FILE).read_text())["trajbench"]
    lied = write_run(
        tmp_path / "lied",
        sample_shards,
        _padded,
        tokens=lambda row: server(430),
        client_tokens=lambda row: 430,
        tokenizer="words",
        finish=True,
    )
    bad = failed(lied, sample_shards)
    assert bad["client-tokens"].startswith(why)
    ours = json.loads((lied / SUMMARY_FILE).read_text())["trajbench"]
    assert ours["throughput"]["output_tokens"] == honest["throughput"]["output_tokens"] == 17 * 430
    assert ours["throughput"]["output_tokens_per_s"] == honest["throughput"]["output_tokens_per_s"]


def _padded(row: traces.TurnRow) -> dict[str, Any]:
    out = perfect(row)
    return {**out, "content": out["content"] + "\n" + "ok " * 430}


def test_a_point_without_a_client_tokenizer_is_not_official(tmp_path: Path, sample_shards: Path) -> None:
    run = write_run(tmp_path / "r", sample_shards, perfect, tokens=lambda row: 430, finish=True)
    assert failed(run, sample_shards)["client-tokens"].startswith(
        "run.json tokenizer is null: the output tokens were not counted by the client"
    )


# ---------------------------------------------------------------- real replays


def _usage_of(completion_tokens: int, body: dict[str, Any], headers: dict[str, str]) -> Reply:
    """A server plan: every answer 3 chunks long, its usage saying `completion_tokens`."""
    return Reply(chunks=3, completion_tokens=completion_tokens)


def _replay(shards: Path, out: Path, base_url: str, **kw: Any) -> Path:
    options: dict[str, Any] = {
        "profile": "qwen3.6-35b-a3b",
        "tokenizer": "qwen3.6",
        "concurrency": 4,
        "progress": "none",
        "inject_delays": False,  # not what these runs test (the delays check reads run.json)
        **kw,
    }
    return asyncio.run(run_replay(RunConfig(shards=str(shards), endpoint=base_url, out=str(out), **options)))


@pytest.fixture(scope="module")
def honest_tokens() -> int:
    """The client's count of the loopback server's 3-chunk answer ("w0 w1 w2 "), as a run with
    --tokenizer qwen3.6 counts it: what an honest server reports as usage."""
    from traces.tokenizers import load_tokenizer

    prof = traces.get_profile("qwen3.6-35b-a3b")
    tok = load_tokenizer("qwen3.6", template_kwargs=dict(prof.chat_template_kwargs))
    n = tok.output_tokens({"content": "w0 w1 w2 ", "reasoning_content": "", "tool_calls": []})
    assert n is not None
    return n


@pytest.mark.slow  # three replays with a tokenizer; the written-folder cases above run by default
def test_real_runs_honest_inflated_negative_and_absurd_usage(
    tmp_path: Path, sample_shards: Path, honest_tokens: int
) -> None:
    """The headline never follows the server's usage: the same answers give the same output
    tokens whatever usage says, and eval check names the lie."""
    runs: dict[str, Path] = {}
    for name, usage in (
        ("honest", honest_tokens),
        ("inflated", honest_tokens * 400),
        ("negative", -honest_tokens * 4000),
    ):
        with LoopbackServer(functools.partial(_usage_of, usage)) as srv:
            runs[name] = _replay(sample_shards, tmp_path / name, srv.base_url)
    numbers = {k: json.loads((v / SUMMARY_FILE).read_text())["trajbench"] for k, v in runs.items()}
    for name in ("inflated", "negative"):  # which turns the window holds is the run's; their tokens are the client's
        ours = numbers[name]
        assert ours["throughput"]["output_tokens"] == ours["turns"]["window"]["ok"] * honest_tokens
        assert ours["all_turns"]["output_tokens"] == 17 * honest_tokens  # the window's turns and the tail
        assert ours["throughput"]["output_tokens_per_s"] > 0
    honest = checks_of(runs["honest"], sample_shards)
    assert [(k, honest[k].reason) for k in VERIFIED if not honest[k].passed] == []
    assert "mean usage 7.0 vs client 7.0 (+0.0 %" in honest["client-tokens"].reason.replace(f"{honest_tokens}.0", "7.0")
    inflated = failed(runs["inflated"], sample_shards)["client-tokens"]
    assert "absurd 17; absurd: more tokens than the answer's characters + 32), e.g. " in inflated
    assert f"usage {honest_tokens * 400} (absurd; client {honest_tokens}, 9 characters)" in inflated
    negative = failed(runs["negative"], sample_shards)["client-tokens"]
    assert f"usage {-honest_tokens * 4000} (negative; client {honest_tokens}, 9 characters)" in negative


@pytest.mark.slow
def test_real_run_with_failed_and_aborted_turns_against_its_budget(tmp_path: Path, sample_shards: Path) -> None:
    """Two of the first requests fail with HTTP 500: each aborts the rest of its trajectory."""
    seen: list[str] = []

    def plan(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        sid = headers.get("X-Session-ID", "")
        if sid not in seen:
            seen.append(sid)
        first_turn = len([m for m in body["messages"] if m["role"] != "system"]) == 1
        return Reply(status=500) if first_turn and seen.index(sid) in (0, 2) else Reply(chunks=3)

    with LoopbackServer(plan) as srv:
        run = _replay(sample_shards, tmp_path / "failing", srv.base_url, concurrency=1, tokenizer=None)
    kinds: dict[str, int] = {}
    for r in read_records(run):
        if not r.ok:
            kinds[r.error_kind or "?"] = kinds.get(r.error_kind or "?", 0) + 1
    used = sum(kinds.values())
    assert kinds.get("http") == 2 and used > 2
    text = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    assert failed(run, sample_shards)["failure-budget"] == (
        f"records.jsonl.zst: {used} of 17 window turns did not end ok ({text}) > budget 0 (run.json "
        "failure_budget, --failure-budget); an official point states the failures it allows: fix the endpoint and "
        "rerun, or rerun with a larger --failure-budget"
    )
    seen.clear()
    with LoopbackServer(plan) as srv:
        run = _replay(
            sample_shards, tmp_path / "budgeted", srv.base_url, concurrency=1, tokenizer=None, failure_budget=used
        )
    check = checks_of(run, sample_shards)["failure-budget"]
    assert check.passed and check.reason == (
        f"records.jsonl.zst: {used} of 17 window turns did not end ok ({text}); budget {used} (run.json failure_budget)"
    )


class Stalling:
    """A server plan: the first `answered` requests get an answer, every later one stalls (a
    run that cannot finish before the test has done what it does mid-run)."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        self.seen = 0

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        self.seen += 1
        return Reply(chunks=3) if self.seen <= self.answered else Reply(stall=60)


def _run_args(shards: Path, out: Path, base_url: str, *more: str) -> list[str]:
    return [
        "replay",
        "run",
        str(shards),
        "--endpoint",
        base_url,
        "--no-delays",
        "-c",
        "2",
        "--drain-timeout",
        "0.2",
        "--out",
        str(out),
        *more,
    ]


def _records_at_least(out: Path, n: int) -> Callable[[], bool]:
    path = out / "records.jsonl"
    return lambda: path.is_file() and path.read_bytes().count(b"\n") >= n


def _check_json(run: Path, shards: Path) -> dict[str, dict[str, Any]]:
    done = trajbench("eval", "check", str(run), "--expected-hash", traces.Shards(shards).content_hash, "--json")
    assert done.code == 1 and "Traceback" not in done.err
    return {c["check"]: c for c in json.loads(done.out)["checks"] if c["point"] != "submission"}


@pytest.mark.slow
def test_a_run_stopped_by_sigint_is_not_complete(tmp_path: Path, sample_shards: Path) -> None:
    out = tmp_path / "sigint"
    with LoopbackServer(Stalling(3)) as srv:
        done = interrupt_when(_run_args(sample_shards, out, srv.base_url), _records_at_least(out, 2), signal.SIGINT)
    assert done.code == 130
    recorded = len({(r.instance_id, r.turn) for r in read_records(out)})
    assert 3 <= recorded < 17  # the stalled turns cancelled by the drain's end, recorded
    checks = _check_json(out, sample_shards)
    assert not checks["complete"]["passed"]
    assert checks["complete"]["reason"].startswith(
        f"{SUMMARY_FILE}: state interrupted (Ctrl-C or SIGTERM stopped issuing); "
        f"records.jsonl.zst: {recorded} of 17 planned turns recorded; without a record: "
    )
    assert checks["seal"]["passed"]  # the folder is what the interrupted run wrote


@pytest.mark.slow
def test_a_run_killed_with_sigkill_has_no_summary_and_no_seal(tmp_path: Path, sample_shards: Path) -> None:
    out = tmp_path / "sigkill"
    with LoopbackServer(Stalling(3)) as srv:
        done = interrupt_when(_run_args(sample_shards, out, srv.base_url), _records_at_least(out, 2), signal.SIGKILL)
    assert done.code == -signal.SIGKILL
    recorded = len({(r.instance_id, r.turn) for r in read_records(out)})
    checks = _check_json(out, sample_shards)
    assert checks["complete"]["reason"].startswith(
        f"{SUMMARY_FILE}: missing (the run was killed, or is still running); "
        f"records.jsonl: {recorded} of 17 planned turns recorded; without a record: "
    )
    assert checks["seal"]["reason"].startswith(f"{out}/seal.json: missing; the run never finished writing the folder")
    assert checks["recomputed"]["reason"].startswith(f"{out}/{SUMMARY_FILE}: missing")


@pytest.mark.slow
def test_a_second_run_on_the_same_out_is_refused_with_the_holders_pid(tmp_path: Path, sample_shards: Path) -> None:
    out = tmp_path / "shared"
    gate = threading.Event()  # the first run's requests wait here until the second was refused

    def held(body: dict[str, Any], headers: dict[str, str]) -> Reply:
        gate.wait(60)
        return Reply(chunks=3)

    with LoopbackServer(held) as srv:
        first = subprocess.Popen(
            command(*_run_args(sample_shards, out, srv.base_url, "--failure-budget", "2")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        try:
            _wait(lambda: (out / "run.json").is_file(), first)
            for extra in ((), ("--overwrite",)):
                second = trajbench(*_run_args(sample_shards, out, srv.base_url, *extra))
                assert second.code == 1, second.err
                assert second.error_lines == [
                    f"Error: {out}: in use by process {first.pid}, which is writing this run folder now "
                    "(.trajbench.lock); wait for it to end or choose another --out (--overwrite never takes a "
                    "folder in use)"
                ]
            gate.set()
            assert first.wait(120) == 0, first.communicate()[1]
        finally:
            gate.set()
            if first.poll() is None:
                first.kill()
            first.communicate()
    assert len(list(read_records(out))) == 17  # one run's records, none merged in
    assert not (out / ".trajbench.lock").exists()
    checks = checks_of(out, sample_shards)
    assert checks["complete"].passed
    assert checks["failure-budget"].reason.endswith("; budget 2 (run.json failure_budget)")  # --failure-budget 2


def _env() -> dict[str, str]:
    import os

    from clirun import ROOT

    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def _wait(ready: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"the first run ended before it was ready: {proc.communicate()[1]}")
        if time.monotonic() > deadline:
            raise AssertionError("the first run never wrote a record")
        time.sleep(0.02)
