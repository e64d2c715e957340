"""The agentic audits (docs/audits.md), end to end on the simulator: each fails on the `--game`
that games it and passes on the honest simulator; a sweep with `--flush-cache` starts each point
cold, one without it starts the second point warm; the same-model audit compares the engine
identity of points and SWE-bench runs.

The simulator renders and counts prompts with the run's tokenizer (`--tokenizer qwen3.6`), so the
cache analysis each cache audit judges from is exact (docs/cache.md)."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cachedata import write_dataset
from clirun import in_process
from evalruns import record

import replay
import traces
from eval.audits import AuditResult, audit_runs
from eval.audits.engine import same_model
from eval.audits.output import output_consistency
from eval.swebench import SwebenchSummary, read_summary
from replay import EngineIdentity, RunInfo
from replay.sim import embedded_config, start_simulator

ZERO = ["--step-base-ms", "0", "--prefill-ms-per-token", "0", "--batch-ms-per-seq", "0"]
BLOCK = 16
CLOSE = {"role": "assistant", "content": "The fix is in place and the tests pass."}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 coding trajectories of 5 client turns (prompts growing ~210 tokens a turn), each closed by a
    recorded answer (a turn without one gets an empty answer from the oracle, which the
    output-consistency audit would count)."""
    tmp = tmp_path_factory.mktemp("audits")
    src = write_dataset(tmp / "cache.jsonl", conversations=4, turns=5)
    rows = [json.loads(line) for line in src.read_text("utf-8").splitlines()]
    closed: list[dict[str, Any]] = []
    for k, row in enumerate(rows):
        closed.append(row)
        if k + 1 == len(rows) or rows[k + 1]["conversation_id"] != row["conversation_id"]:
            closed.append({**CLOSE, "conversation_id": row["conversation_id"], "turn": row["turn"] + 1})
    src.write_text("".join(json.dumps(r) + "\n" for r in closed), encoding="utf-8")
    out = tmp / "shards"
    traces.build_shards([str(src)], out, traces.BuildOptions(name="audits"))
    return out


def run(
    shards: Path,
    out: Path,
    *,
    game: str = "none",
    endpoint: str | None = None,
    flush: bool = True,
    trajectories: int | None = None,
    concurrency: int = 2,
) -> Path:
    """A replay on the simulator (embedded, or the standalone one at `endpoint`) with oracle answers."""
    sim = None
    if endpoint is None:
        sim = embedded_config(str(shards.resolve()), ["--tokenizer", "qwen3.6", "--game", game, *ZERO])
    config = replay.RunConfig(
        shards=str(shards),
        profile="qwen3.6-35b-a3b",
        endpoint=endpoint,
        concurrency=concurrency,
        num_trajectories=trajectories,
        inject_delays=False,
        out=str(out),
        sim=sim,
        progress="none",
        flush_cache=flush,
    )
    return asyncio.run(replay.run_replay(config))


def audits(*dirs: Path, **kw: Any) -> dict[str, AuditResult]:
    return {
        f"{Path(a.point).name}:{a.audit}" if a.point != "submission" else a.audit: a for a in audit_runs(dirs, **kw)
    }


def verdicts(results: dict[str, AuditResult]) -> dict[str, bool]:
    return {k.split(":")[-1]: a.passed for k, a in results.items()}


@pytest.fixture(scope="module")
def honest(shards: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(shards, tmp_path_factory.mktemp("honest") / "run")


@pytest.mark.slow
def test_the_honest_simulator_passes_every_audit(honest: Path) -> None:
    results = audits(honest)
    assert verdicts(results) == dict.fromkeys(
        ("cache-exploit", "warm-cache", "output-consistency", "same-model"), True
    ), [a.reason for a in results.values()]
    warm = results["run:warm-cache"]
    assert warm.figures["cache_flush"] == "POST /reset_prefix_cache: HTTP 200"
    assert warm.reason == "4 first turns within their cross-instance share; the cache was reset before the run " \
        "(POST /reset_prefix_cache: HTTP 200)"  # fmt: skip
    info = RunInfo.read(honest)
    assert info.engine is not None and (info.engine.engine, info.engine.version) == (
        "trajbench-sim",
        traces.__version__,
    )


@pytest.mark.parametrize(
    ("game", "trajectories", "caught"),
    [
        ("generated-reuse", None, "cache-exploit"),
        ("cross-session", 8, "cache-exploit"),  # two repeats: the second reuses the first past the salt
        ("truncate", None, "output-consistency"),
    ],
)
@pytest.mark.slow
def test_each_game_is_caught_by_its_own_audit(
    shards: Path, tmp_path: Path, game: str, trajectories: int | None, caught: str
) -> None:
    results = audits(run(shards, tmp_path / "run", game=game, trajectories=trajectories))
    assert not results[f"run:{caught}"].passed, results[f"run:{caught}"].reason
    assert results["run:output-consistency"].passed == (caught != "output-consistency")
    if game == "generated-reuse":  # its own answer past the marker: later turns only, every one of them
        exploit = results["run:cache-exploit"]
        assert exploit.figures["offending_turns"] == 16 and {o.turn for o in exploit.offending} == {3, 5, 7, 9}
        assert exploit.figures["hit_rate_of_ideal"] > 1.0
        assert results["run:warm-cache"].passed  # its first turns hold no answer to reuse
    if game == "cross-session":
        exploit = results["run:cache-exploit"]
        assert {o.instance_id.endswith("__repeat_2") for o in exploit.offending} == {True}
    if game == "truncate":
        out = results["run:output-consistency"]
        assert (out.figures["first_token_share"], out.figures["length_share"]) == (1.0, 1.0)
        assert "over the limit: first token, length" in out.reason
        assert results["run:cache-exploit"].passed and results["run:warm-cache"].passed


@pytest.mark.slow
def test_a_response_cache_is_warm_on_the_next_run_even_after_a_reset(shards: Path, tmp_path: Path) -> None:
    options = ["--answers", "oracle", "--shards", str(shards.resolve()), "--tokenizer", "qwen3.6", *ZERO]
    with start_simulator([*options, "--game", "response-cache"]) as sim:
        first = run(shards, tmp_path / "first", endpoint=sim.base_url)
        second = run(shards, tmp_path / "second", endpoint=sim.base_url)
    results = audits(first, second)
    assert results["first:warm-cache"].passed, results["first:warm-cache"].reason
    warm = results["second:warm-cache"]
    assert not warm.passed and warm.figures["offending_turns"] == warm.figures["first_turns"] == 4
    assert warm.reason.startswith("4 of 4 first turns cached beyond their cross-instance share")
    assert "the reset did not empty it" in warm.reason  # it was flushed, and still warm


def sweep(shards: Path, endpoint: str, out: Path) -> Path:
    base = replay.RunConfig(
        shards=str(shards),
        profile="qwen3.6-35b-a3b",
        endpoint=endpoint,
        inject_delays=False,
        progress="none",
        overwrite=True,
        flush_cache=True,
    )
    return asyncio.run(replay.run_sweep(base, [1, 2], out, echo=lambda *_: None))


@pytest.mark.slow
def test_a_sweep_with_flush_cache_starts_every_point_cold_and_a_run_without_it_is_warm(
    shards: Path, tmp_path: Path
) -> None:
    from replay import cacheobs

    options = ["--answers", "oracle", "--shards", str(shards.resolve()), "--tokenizer", "qwen3.6", *ZERO]
    with start_simulator(options) as sim:
        cold = sweep(shards, sim.base_url, tmp_path / "sweep")
        warm = run(shards, tmp_path / "after", endpoint=sim.base_url, flush=False)  # the same server, not reset
    for point in ("c0001", "c0002"):  # the second point served after the first, and cold all the same
        _, rows = cacheobs.analyse_run(cold / point)
        first = [r for r in rows if r.within == 0]
        assert len(first) == 4 and all(r.cached <= r.cross + BLOCK for r in first)  # at most the cross share
        assert RunInfo.read(cold / point).cache_flush is not None
    flushed = audits(cold)
    assert all(a.passed for a in flushed.values()), [a.reason for a in flushed.values() if not a.passed]
    after = audits(warm)
    assert not after["after:warm-cache"].passed
    reason = after["after:warm-cache"].reason
    assert reason.startswith("4 of 4 first turns cached beyond their cross-instance share")
    assert "the engine's counters showed cache hits before the run" in reason
    assert "restart the server or pass --flush-cache" in reason
    assert after["after:warm-cache"].figures["hits_before"]["trajbench_sim_prompt_tokens_cached_total"] > 0
    assert not after["after:cache-exploit"].passed  # a warm cache reuses beyond the ideal too
    assert after["after:cache-exploit"].figures["hit_rate_of_ideal"] > 1.0


def with_engine(src: Path, dest: Path, **change: Any) -> Path:
    shutil.copytree(src, dest)
    info = RunInfo.read(dest)
    assert info.engine is not None
    engine = None if change.get("engine") is False else replace(info.engine, **change)
    replace(info, engine=engine).write(dest)
    return dest


def swebench_dir(root: Path, engine: EngineIdentity | None, model: str = "Qwen/Qwen3.6-35B-A3B") -> Path:
    root.mkdir()
    SwebenchSummary(
        kind="swebench",
        profile="qwen3.6-35b-a3b",
        instances=0,
        resolved=0,
        incomplete=0,
        score=0.0,
        concurrency=None,
        runtime="local",
        model=model,
        engine=engine,
    ).write(root)
    return root


@pytest.mark.slow
def test_same_model_compares_every_point_and_swebench_run(honest: Path, tmp_path: Path) -> None:
    info = RunInfo.read(honest)
    assert info.engine is not None
    same = swebench_dir(tmp_path / "swe-same", info.engine)
    assert same_model([("c2", info)], [(str(same), read_summary(same))]).passed
    other = replace(info, engine=replace(info.engine, version="9.9.9"))
    swe = swebench_dir(
        tmp_path / "swe-other", replace(info.engine, chat_template_sha256="ab" * 32), model="other/model"
    )
    result = same_model([("c2", info), ("c8", other)], [(str(swe), read_summary(swe))])
    assert not result.passed
    assert f"model differs: Qwen/Qwen3.6-35B-A3B (c2, c8); other/model ({swe})" in result.reason
    assert f"version differs: {traces.__version__} (c2, {swe}); 9.9.9 (c8)" in result.reason
    assert "chat_template_sha256 differs" in result.reason
    old = swebench_dir(tmp_path / "swe-old", None)
    result = same_model([("c1", replace(info, engine=None))], [(str(old), read_summary(old))])
    assert "c1: run.json records no engine identity; rerun the point with this trajbench" in result.reason
    assert f"{old}: records no engine identity" in result.reason


def answered(row: traces.TurnRow, **over: Any) -> replay.Record:
    r = record(row, {"content": "ok", "reasoning": "", "tool_calls": []}, tokens=40)
    return replace(r, **over)


def test_output_consistency_counts_from_the_output_and_judges_by_the_profile(sample_shards: Path) -> None:
    rows = [row for inst in traces.Shards(sample_shards) for row in inst.turns]
    recs = [answered(row) for row in rows[:17]]
    recs[0] = replace(
        recs[0], content="", completion_tokens=0, error_kind="empty"
    )  # a `choices: []` answer, whatever its kind
    recs[1] = replace(recs[1], completion_tokens=1)
    recs[2] = replace(recs[2], finish_reason="length")
    recs[3] = replace(recs[3], content="", http_status=None, error_kind="timeout")  # never answered: not judged
    limits = dict(traces.DEFAULT_OUTPUT_CONSISTENCY)
    out = output_consistency("p", recs, limits, "qwen3.6-35b-a3b")
    f = out.figures
    assert (f["answered_turns"], f["empty_turns"], f["first_token_turns"], f["length_turns"]) == (16, 1, 1, 1)
    assert not out.passed and "over the limit: empty, first token" in out.reason  # 1/16 > 1 %; length 6.25 % > 5 %
    lenient = output_consistency("p", recs, {"empty": 0.1, "first_token": 0.1, "length": 0.1}, "mine")
    assert lenient.passed and lenient.reason.startswith("of 16 answered turns: empty 6.25% (limit 10.00%)")


def test_a_profile_states_its_own_limits_and_a_bad_one_is_told(tmp_path: Path) -> None:
    base = traces.get_profile("qwen3.6-35b-a3b")
    assert base.output_consistency is None and "output_consistency" not in base.content()  # the hash is unchanged
    assert base.output_limits() == traces.DEFAULT_OUTPUT_CONSISTENCY
    spec = {k: v for k, v in base.content().items() if k != "name"}
    assert traces.check_profile("mine", {**spec, "output_consistency": {"length": 0.2}}) == []
    mine = traces.profile_from({"name": "mine", **spec, "output_consistency": {"length": 0.2}}, source="x")
    assert mine.output_limits() == {**traces.DEFAULT_OUTPUT_CONSISTENCY, "length": 0.2}
    assert mine.content_hash() != base.content_hash()  # a stated limit is part of what judges the run
    problems = traces.check_profile("mine", {**spec, "output_consistency": {"length": 5, "late": 0.1}})
    assert problems == [
        "profile 'mine': output_consistency.late: unknown limit; remove it (the limits are empty, first_token, length)",
        "profile 'mine': output_consistency.length: must be a share within [0, 1], got 5; write 0.05 for 5 %",
    ]


@pytest.mark.slow
def test_the_audit_command_gives_the_same_json_twice_and_fails_with_a_table(
    honest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first, _ = in_process(["audit", str(honest), "--json"], capsys)
    code2, second, _ = in_process(["audit", str(honest), "--json"], capsys)
    assert code == code2 == 0 and first == second
    data = json.loads(first)
    assert data["passed"] is True and [a["audit"] for a in data["audits"]] == [
        "cache-exploit",
        "warm-cache",
        "output-consistency",
        "same-model",
    ]
    assert data["audits"][0]["rule"].startswith("no turn has more cached tokens than its ideal reusable prefix")
    bare = with_engine(honest, tmp_path / "old", engine=False)
    code, out, err = in_process(["audit", str(bare), "--tokenizer", "kimi"], capsys)
    assert code == 1 and err == "3 of 4 audits failed (docs/audits.md)\n"
    assert "cache-exploit" in out and "could not run: its cache analysis" in out and "Traceback" not in out + err
