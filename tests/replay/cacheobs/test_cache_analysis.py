"""`trajbench analyze cache` against the simulator, which knows the truth: its router decides the
replica (sent back in X-Sim-Replica), its LRU cache decides evictions (its /metrics counts them),
and with `tokenizer="qwen3.6"` it renders and counts prompts exactly as the analysis does, so the
deficit of every turn is exact and its cause checkable (docs/cache.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cachedata import ZERO, build, replay_on_sim

import replay
from replay import cacheobs
from replay.sim import SimConfig


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 trajectories × 12 client turns, prompts growing ~210 tokens a turn to ~2.7k."""
    return build(tmp_path_factory.mktemp("cache"), conversations=6, turns=12, delay=0.02)


@pytest.fixture(scope="module")
def affinity_run(shards: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return replay_on_sim(shards, tmp_path_factory.mktemp("aff") / "run", concurrency=2, cache_tokens=None)


@pytest.mark.slow
def test_round_robin_over_4_replicas_is_mostly_affinity_misses(shards: Path, tmp_path: Path) -> None:
    run = replay_on_sim(shards, tmp_path / "run", concurrency=2, replicas=4, router="round-robin", cache_tokens=None)
    a = cacheobs.analyse_cache(run).analysis
    assert a.turns == 72 and a.replica_header == "X-Sim-Replica" and a.block_size == 16
    assert a.cause("affinity_miss").share > 0.8, a.causes
    assert a.cause("eviction").turns == 0  # an unlimited cache evicts nothing (and /metrics says so)
    assert a.evictions_rose == 0.0


@pytest.mark.slow
def test_a_cache_far_smaller_than_the_working_set_is_mostly_eviction(shards: Path, tmp_path: Path) -> None:
    run = replay_on_sim(shards, tmp_path / "run", concurrency=3, delays=True, cache_tokens=1024)
    a = cacheobs.analyse_cache(run).analysis
    assert a.evictions_rose is not None and a.evictions_rose > 0  # corroborated by the simulator's counter
    assert a.cause("eviction").share > 0.8, a.causes
    assert a.cause("affinity_miss").turns == 0  # one replica: every turn lands where its session was


@pytest.mark.slow
def test_affinity_with_an_unlimited_cache_misses_only_within_a_block(affinity_run: Path) -> None:
    result = cacheobs.analyse_cache(affinity_run)
    a = result.analysis
    assert a.within_block_share >= 0.99, [r for r in result.rows if r.deficit > a.block_size]
    assert a.turns == 72 and a.failed_turns == 0 and a.turns_without_cached == 0 and a.count_mismatch_turns == 0
    # the ideal is counted with the run's tokenizer and template: the server's prompt counts agree
    assert all(r.isl == r.server_prompt_tokens for r in result.rows)
    # later turns reuse their own previous prompt; first turns the salted system prompt of others
    assert all(r.within > 0 for r in result.rows if r.turn > 1)
    assert sum(1 for r in result.rows if r.cross > 0) == 5


@pytest.mark.slow
def test_same_run_folder_same_bytes(affinity_run: Path, tmp_path: Path) -> None:
    first = cacheobs.analyse_cache(affinity_run, out=tmp_path / "a")
    second = cacheobs.analyse_cache(affinity_run, out=tmp_path / "b")
    names = sorted(f.name for f in first.files)
    assert names == sorted(f.name for f in second.files)
    assert {"cache_analysis.json", "cache_turns.parquet", "cache_deficit_by_cause.png"} <= set(names)
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_the_turn_rows_are_real_parquet(affinity_run: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    result = cacheobs.analyse_cache(affinity_run, out=tmp_path)
    table = pq.read_table(tmp_path / "cache_turns.parquet")
    assert table.num_rows == 72
    assert table.column("cause").to_pylist() == [r.cause for r in result.rows]


def test_a_run_whose_shards_are_gone_says_how_to_fix_it(affinity_run: Path, tmp_path: Path) -> None:
    with pytest.raises(replay.ReplayError, match=r"cannot be read .*pass --shards DIR"):
        cacheobs.analyse_cache(affinity_run, cacheobs.CacheOptions(shards=str(tmp_path / "nope")), out=tmp_path)
    with pytest.raises(replay.ReplayError, match="no such folder; pass a run folder"):
        cacheobs.analyse_cache(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(replay.ReplayError, match=r"no run\.json"):
        cacheobs.analyse_cache(tmp_path / "empty")


def test_a_tokenizer_that_cannot_load_is_a_clear_error(affinity_run: Path, tmp_path: Path) -> None:
    with pytest.raises(replay.ReplayError, match=r"tokenizer 'kimi' .* pass --tokenizer NAME:PATH"):
        cacheobs.analyse_cache(affinity_run, cacheobs.CacheOptions(tokenizer="kimi"), out=tmp_path)


@pytest.mark.slow
def test_the_report_shows_a_run_folders_cache_analysis(affinity_run: Path, tmp_path: Path) -> None:
    import shutil

    from replay.report.page import build_report

    run = tmp_path / "run"
    shutil.copytree(affinity_run, run, ignore=shutil.ignore_patterns("cache_*"))
    before = build_report([("sim", run)], tmp_path / "before").read_text("utf-8")
    assert "Prefix-cache deficit" not in before
    cacheobs.analyse_cache(run)  # beside the run's own files
    page = build_report([("sim", run)], tmp_path / "after").read_text("utf-8")
    assert "Prefix-cache deficit" in page and "docs/cache.md" in page
    for chart in ("cache_deficit_by_cause", "cache_hit_vs_delay", "cache_hit_vs_isl"):
        assert f'alt="{chart}"' in page


def test_an_analysis_written_into_a_sealed_run_folder_amends_its_seal(affinity_run: Path, tmp_path: Path) -> None:
    import shutil

    run = Path(shutil.copytree(affinity_run, tmp_path / "run"))
    made = cacheobs.analyse_cache(run).files
    check = replay.verify_seal(run)
    assert check.intact, check.reason()
    seal = replay.read_seal(run)
    assert seal is not None
    assert {f.name for f in made} <= set(seal.files)
    assert {seal.files[f.name].writer for f in made} == {f"analyze cache {replay.read_run_info(run).trajbench_version}"}


@pytest.mark.slow
def test_a_sweep_folder_charts_the_deficit_against_concurrency(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clirun import in_process

    config = SimConfig(answers="synthetic", osl_mean=24, osl_cv=0.0, tokenizer="qwen3.6", cache_tokens=2048, **ZERO)
    base = replay.RunConfig(
        shards=str(shards),
        profile="qwen3.6-35b-a3b",
        num_trajectories=3,
        inject_delays=False,
        sim=config,
        progress="none",
    )
    sweep = asyncio.run(replay.run_sweep(base, [1, 3], tmp_path / "sweep", echo=lambda *_: None))
    code, out, err = in_process(["analyze", "cache", str(sweep), "--block-size", "16"], capsys)
    assert code == 0, err
    assert out.count("Cache deficit of c000") == 2 and "cache_deficit_vs_concurrency.png" in out
    assert (sweep / "cache_deficit_vs_concurrency.png").read_bytes().startswith(b"\x89PNG")
    low, high = (cacheobs.CacheAnalysis.read(sweep / d) for d in ("c0001", "c0003"))
    assert (low.block_size_source, low.replica_header) == ("given", None)
    assert high.cause("eviction").deficit_tokens > low.cause("eviction").deficit_tokens


@pytest.mark.slow
def test_an_engine_that_counts_otherwise_is_told_not_hidden(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clirun import in_process

    from replay.results.records import read_records

    # the simulator's own ~4-characters-per-token count, not the run's tokenizer; no replica header kept
    config = SimConfig(answers="synthetic", osl_mean=24, osl_cv=0.0, **ZERO)
    run = replay.RunConfig(
        shards=str(shards),
        profile="qwen3.6-35b-a3b",
        num_trajectories=1,
        inject_delays=False,
        out=str(tmp_path / "run"),
        sim=config,
        progress="none",
    )
    folder = asyncio.run(replay.run_replay(run))
    assert all(r.replica is None for r in read_records(folder))
    # counted with the run's tokenizer (the simulator's own units are what `analyze cache` takes by
    # default for a simulated run, below): the simulator stands in for an engine that counts otherwise
    code, _, err = in_process(["analyze", "cache", str(folder), "--tokenizer", "qwen3.6"], capsys)
    assert code == 0, err
    a = cacheobs.CacheAnalysis.read(folder)
    assert a.turns == 12 and a.count_mismatch_turns >= 10 and a.replica_header is None
    assert f"Warning: on {a.count_mismatch_turns} of 12 turns the server's prompt tokens differ" in err
    assert "a deficit no earlier cause explains is template_drift there" in err


@pytest.mark.slow
def test_an_engine_that_counts_otherwise_is_template_drift(shards: Path, tmp_path: Path) -> None:
    """Evidence end to end: the simulator without the run's tokenizer renders and counts its own
    way (~4 characters a token), so its cache keys are not the client's prompt's; the deficits no
    earlier cause explains are template drift, and only on turns whose counts disagree."""
    run = replay_on_sim(shards, tmp_path / "run", concurrency=2, tokenizer=None, cache_tokens=None)
    result = cacheobs.analyse_cache(run, cacheobs.CacheOptions(tokenizer="qwen3.6"))  # the client's count
    a, block = result.analysis, result.analysis.block_size
    mismatch = {(r.instance_id, r.turn) for r in result.rows if abs((r.server_prompt_tokens or 0) - r.isl) > block}
    drift = [r for r in result.rows if r.cause == "template_drift"]
    assert a.count_mismatch_turns == len(mismatch) >= 60 and a.template_check is None
    assert len(drift) >= 3 and a.cause("template_drift").deficit_tokens > 0, a.causes
    assert all((r.instance_id, r.turn) in mismatch and r.deficit > block for r in drift)
    # count evidence, on every mismatched turn whatever its cause, and only there
    assert {(r.instance_id, r.turn) for r in result.rows if r.drift_evidence == "count"} == mismatch
    assert all(r.drift_evidence in ("count", None) for r in result.rows)
    # what stays unexplained is only where the counts happen to agree
    assert not [r for r in result.rows if r.cause == "unexplained" and (r.instance_id, r.turn) in mismatch]
    assert not [r for r in result.rows if r.template_checked or r.engine_divergence is not None]


@pytest.mark.slow
def test_a_simulator_run_is_analysed_in_the_simulators_own_units(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The simulator without --tokenizer counts ~4 characters a token in its own prompt format: by
    the run tokenizer's count, turns showed more cached tokens than they could reuse and nearly
    all of the deficit went to template drift. Counted as the simulator counts, its prompt counts
    are the analysis's, no hit exceeds the ideal by a block, and nothing is drift."""
    from clirun import in_process

    run = replay_on_sim(shards, tmp_path / "run", concurrency=2, tokenizer=None, cache_tokens=None)
    code, _, err = in_process(["analyze", "cache", str(run)], capsys)
    assert code == 0, err
    a = cacheobs.CacheAnalysis.read(run)
    rows = cacheobs.analyse_run(run)[1]
    assert a.simulated and a.tokenizer.startswith("trajbench-sim (~4 characters per token")
    assert a.count_mismatch_turns == 0 and a.cause("template_drift").turns == 0 and a.surplus_turns == 0
    assert all(r.server_prompt_tokens == r.isl for r in rows)
    # a hit passes the ideal only by the answer's framing the engine cached with its own answer
    # (`<think>` after the assistant header), less than a block
    assert all(r.deficit >= -a.block_size for r in rows)
    assert a.cause("block_granularity").turns > 0 and a.hit_rate_of_ideal > 0.9
    assert "Note: run was measured against trajbench's simulator" in err and "about 4 characters per token" in err
    assert "Warning" not in err
    # the same run by the run tokenizer's count: what a user saw before
    told = cacheobs.analyse_run(run, cacheobs.CacheOptions(tokenizer="qwen3.6"))[0]
    assert told.count_mismatch_turns > 0 and told.cause("template_drift").turns > 0


def test_a_simulator_with_the_runs_tokenizer_is_analysed_with_it(affinity_run: Path) -> None:
    a = cacheobs.analyse_run(affinity_run)[0]
    assert a.simulated and a.tokenizer == "qwen3.6" and a.count_mismatch_turns == 0
