"""`trajbench analyze cache --template-check FILE`: a real `traces check-template` report, made
against a loopback engine that renders with a deliberately drifted template
(tests/replay/template_server.py), names the turns whose engine tokens part from the client's
inside their ideal reusable prefix as template drift (docs/cache.md)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cachedata import build, replay_on_sim
from template_server import template_server

import replay
import traces
from replay import cacheobs
from replay.engine.template_parity import TemplateParity, check_template
from traces.tokenizers import ChatTokenizer, load_tokenizer

PROFILE = "qwen3.6-35b-a3b"


@pytest.fixture(scope="module")
def qwen() -> ChatTokenizer:
    return load_tokenizer("qwen3.6")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("drift"), conversations=6, turns=12)


@pytest.fixture(scope="module")
def tight_run(shards: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One user at a time and a 1,024-token cache: each session's prompt outgrows the cache with
    nothing else running, so its later turns have deficits no cache rule explains (unexplained)."""
    return replay_on_sim(shards, tmp_path_factory.mktemp("tight") / "run", concurrency=1, cache_tokens=1024)


@pytest.fixture(scope="module")
def plain(tight_run: Path, tmp_path_factory: pytest.TempPathFactory) -> cacheobs.CacheResult:
    return cacheobs.analyse_cache(tight_run, out=tmp_path_factory.mktemp("plain"))


def _check(shards: Path, qwen: ChatTokenizer, drift: Callable[[str], str], sample: int, path: Path) -> Path:
    with template_server(qwen, "vllm", drift) as (url, _):
        report = check_template(str(shards), url, qwen, traces.get_profile(PROFILE), sample=sample)
    return report.write_to(path)


def _read(path: Path) -> TemplateParity:
    return traces.from_json(TemplateParity, json.loads(path.read_text("utf-8")), str(path))


def _system_drift(text: str) -> str:
    """Another system prompt: the engine parts from the client a few tokens in."""
    assert "careful software" in text
    return text.replace("careful software", "careful  software", 1)


def _tail_drift(text: str) -> str:
    """Text after the whole prompt: the client's prompt is a prefix of the engine's."""
    return text + "zzz"


@pytest.mark.slow
def test_a_divergence_inside_the_ideal_prefix_is_template_drift(
    shards: Path, qwen: ChatTokenizer, tight_run: Path, plain: cacheobs.CacheResult, tmp_path: Path
) -> None:
    assert plain.analysis.cause("unexplained").turns >= 30 and plain.analysis.cause("template_drift").turns == 0
    parity = _check(shards, qwen, _system_drift, 12, tmp_path / "parity.json")  # 2 turns of each instance
    result = cacheobs.analyse_cache(tight_run, cacheobs.CacheOptions(template_check=str(parity)), out=tmp_path / "a")
    a = result.analysis
    before = {(r.instance_id, r.turn): r.cause for r in plain.rows}
    first_isl = {r.instance_id: r.isl for r in plain.rows if r.turn == 1}
    covered = [r for r in result.rows if r.template_checked]
    assert a.template_check == "parity.json" and a.template_check_sha256 is not None
    assert a.template_check_turns == len(covered) and 12 < len(covered) <= 24  # a checked turn and the one after
    for r in result.rows:
        was = before[(r.instance_id, r.turn)]
        if not r.template_checked:
            assert r.engine_divergence is None and r.drift_evidence is None and r.cause == was
            continue
        # in the system prompt, which every turn of the instance starts with
        assert r.engine_divergence is not None and 0 < r.engine_divergence < first_isl[r.instance_id]
        assert r.cause == ("template_drift" if was == "unexplained" else was), r
        assert r.drift_evidence == ("check" if r.engine_divergence < r.ideal else None), r
    drift = a.cause("template_drift")
    assert drift.turns >= 5 and drift.turns == sum(
        1 for r in covered if before[(r.instance_id, r.turn)] == "unexplained"
    )
    assert a.cause("unexplained").turns == plain.analysis.cause("unexplained").turns - drift.turns
    assert "template_drift" in a.rules and "--template-check" in a.rules["template_drift"]


@pytest.mark.slow
def test_a_divergence_past_the_ideal_prefix_is_no_drift(
    shards: Path, qwen: ChatTokenizer, tight_run: Path, plain: cacheobs.CacheResult, tmp_path: Path
) -> None:
    parity = _check(shards, qwen, _tail_drift, 72, tmp_path / "tail.json")  # every turn
    report = _read(parity)
    assert report.identical == 0 and all(t.first_divergence == t.client_tokens for t in report.turns)
    result = cacheobs.analyse_cache(tight_run, cacheobs.CacheOptions(template_check=str(parity)), out=tmp_path / "a")
    assert result.analysis.template_check_turns == 72
    assert all(r.template_checked and r.engine_divergence is not None for r in result.rows)
    assert all(r.engine_divergence is not None and r.engine_divergence >= r.ideal for r in result.rows)
    assert [r.cause for r in result.rows] == [r.cause for r in plain.rows]
    assert result.analysis.cause("template_drift").turns == 0


@pytest.mark.slow
def test_a_tail_only_change_is_no_drift_on_cycled_re_salted_repeats(
    qwen: ChatTokenizer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """36 trajectories from 6 stored ones under the strong salt: repeats 2..6 are re-salted, their
    hex salts tokenise to other lengths than the stored ones the check rendered, so the check's
    positions do not hold for them; and a divergence at the checked prompt's own end (the engine
    appends text after the whole prompt) is no drift on any repeat."""
    tmp = tmp_path_factory.mktemp("cycled")
    salted = build(tmp, conversations=6, turns=12, salt="strong")
    run = replay_on_sim(salted, tmp / "run", concurrency=1, cache_tokens=1024, trajectories=36)
    plain = cacheobs.analyse_cache(run, out=tmp / "plain")
    parity = _check(salted, qwen, _tail_drift, 72, tmp / "tail.json")  # every stored turn
    result = cacheobs.analyse_cache(run, cacheobs.CacheOptions(template_check=str(parity)), out=tmp / "a")
    rows = result.rows
    assert len(rows) == 36 * 12 and {r.repeat for r in rows} == set(range(1, 7))
    cycled = [r for r in rows if r.repeat > 1]
    assert any(r.cause == "unexplained" for r in cycled)  # what the check must not turn into drift
    assert all(r.template_checked == (r.repeat == 1) for r in rows)
    assert all(r.engine_divergence is None for r in cycled)
    assert all(r.engine_divergence is not None and r.engine_divergence >= r.ideal for r in rows if r.repeat == 1)
    assert result.analysis.template_check_turns == 72
    assert [r.cause for r in rows] == [r.cause for r in plain.rows]
    assert result.analysis.cause("template_drift").turns == 0


@pytest.mark.slow
def test_an_identical_check_keeps_count_mismatches_from_being_drift(
    shards: Path, qwen: ChatTokenizer, tight_run: Path, plain: cacheobs.CacheResult, tmp_path: Path
) -> None:
    parity = _check(shards, qwen, lambda text: text, 72, tmp_path / "same.json")
    result = cacheobs.analyse_cache(tight_run, cacheobs.CacheOptions(template_check=str(parity)), out=tmp_path / "a")
    assert all(r.template_checked and r.engine_divergence is None for r in result.rows)
    assert [r.cause for r in result.rows] == [r.cause for r in plain.rows]


@pytest.mark.slow
def test_the_warning_names_the_count_fallback_on_turns_no_check_covers(
    shards: Path, qwen: ChatTokenizer, tmp_path: Path
) -> None:
    """The simulator counting its own way mismatches on most turns; a check of a few turns leaves
    the rest to the count rule, and the warning says so; a check of every turn leaves none."""
    run = replay_on_sim(shards, tmp_path / "run", concurrency=2, tokenizer=None, cache_tokens=None)
    some = _check(shards, qwen, lambda text: text, 6, tmp_path / "some.json")
    result = cacheobs.analyse_cache(
        run, cacheobs.CacheOptions(tokenizer="qwen3.6", template_check=str(some)), out=tmp_path / "some"
    )
    a = result.analysis
    fallback = [r for r in result.rows if not r.template_checked and r.drift_evidence == "count"]
    assert 0 < a.count_fallback_turns == len(fallback) < a.count_mismatch_turns
    (line,) = [w for w in cacheobs.warnings(a) if "server's prompt tokens differ" in w]
    assert f"on the {a.count_fallback_turns:,} of them no template check covers" in line, line
    every = _check(shards, qwen, lambda text: text, 72, tmp_path / "every.json")
    b = cacheobs.analyse_cache(
        run, cacheobs.CacheOptions(tokenizer="qwen3.6", template_check=str(every)), out=tmp_path / "every"
    ).analysis
    assert b.count_mismatch_turns > 0 and b.count_fallback_turns == 0
    (line,) = [w for w in cacheobs.warnings(b) if "server's prompt tokens differ" in w]
    assert "template_drift" not in line, line


def test_the_turn_rows_keep_the_divergence(shards: Path, qwen: ChatTokenizer, tight_run: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    parity = _check(shards, qwen, _system_drift, 6, tmp_path / "parity.json")
    result = cacheobs.analyse_cache(tight_run, cacheobs.CacheOptions(template_check=str(parity)), out=tmp_path / "a")
    table = pq.read_table(tmp_path / "a" / "cache_turns.parquet")
    assert table.column("engine_divergence").to_pylist() == [r.engine_divergence for r in result.rows]
    assert table.column("template_checked").to_pylist() == [r.template_checked for r in result.rows]
    assert table.column("drift_evidence").to_pylist() == [r.drift_evidence for r in result.rows]
    assert {r.drift_evidence for r in result.rows if r.cause == "template_drift"} == {"check"}
    assert cacheobs.CacheAnalysis.read(tmp_path / "a") == result.analysis


@pytest.mark.slow
def test_a_check_of_other_shards_or_no_check_at_all_is_refused(
    shards: Path, qwen: ChatTokenizer, tight_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clirun import in_process

    parity = _check(shards, qwen, lambda text: text, 2, tmp_path / "parity.json")
    report = _read(parity)
    other = dataclasses.replace(report, content_hash="0" * 64).write_to(tmp_path / "other.json")
    code, _, err = in_process(
        ["analyze", "cache", str(tight_run), "--template-check", str(other), "--out", str(tmp_path / "o")], capsys
    )
    assert code == 1
    assert f"Error: {other}: checked dataset cache with content hash 0000000000000000…, not the run's" in err
    assert "run `trajbench traces check-template SHARDS --endpoint URL --json FILE` on the shards" in err
    with pytest.raises(replay.ReplayError, match=r"run\.json: not a template-parity report .* check-template"):
        cacheobs.analyse_cache(
            tight_run, cacheobs.CacheOptions(template_check=str(tight_run / "run.json")), out=tmp_path
        )
    with pytest.raises(replay.ReplayError, match=r"nope\.json: cannot be read"):
        cacheobs.analyse_cache(
            tight_run, cacheobs.CacheOptions(template_check=str(tmp_path / "nope.json")), out=tmp_path
        )
    vocab = dataclasses.replace(report, tokenizer="gpt-oss").write_to(tmp_path / "vocab.json")
    with pytest.raises(
        replay.ReplayError, match=r"positions are in gpt-oss's tokens, the analysis counts with qwen3\.6"
    ):
        cacheobs.analyse_cache(tight_run, cacheobs.CacheOptions(template_check=str(vocab)), out=tmp_path)


@pytest.mark.slow
def test_only_a_divergence_inside_the_checked_prompt_parts_the_cache_key(
    shards: Path, qwen: ChatTokenizer, tight_run: Path, plain: cacheobs.CacheResult, tmp_path: Path
) -> None:
    """The same positions, read two ways: at the checked prompt's own end (the engine only adds
    text after it: no drift, however early that end is) or one token inside it (drift)."""
    report = _read(_check(shards, qwen, _tail_drift, 72, tmp_path / "tail.json"))

    def at(divergence: int, client_tokens: int, name: str) -> cacheobs.CacheResult:
        turns = [dataclasses.replace(t, first_divergence=divergence, client_tokens=client_tokens) for t in report.turns]
        parity = dataclasses.replace(report, turns=turns).write_to(tmp_path / name)
        return cacheobs.analyse_cache(
            tight_run, cacheobs.CacheOptions(template_check=str(parity)), out=tmp_path / name[:-5]
        )

    at_end = at(10, 10, "end.json")
    assert [r.cause for r in at_end.rows] == [r.cause for r in plain.rows]
    assert all(r.drift_evidence is None and r.engine_divergence == 10 for r in at_end.rows)
    inside = at(10, 11, "inside.json")
    unexplained = [b for b in plain.rows if b.cause == "unexplained"]
    assert unexplained and inside.analysis.cause("template_drift").turns == len(unexplained)
