"""The synthetic dataset: exact official counts, determinism, validity, domain split, delays, and
recorded answers as long as the reference model's (docs/accuracy.md OSL band)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eval.rules import message_actions, model_intent
from traces import BuildOptions, TraceError, build_shards, get_profile, validate_sources
from traces.inputs.io import iter_lines
from traces.synth import OFFICIAL_CLIENT_TURNS, plan, synthesize
from traces.synth.coding import TOOL_DELAY_QUANTILES, tool_delay
from traces.synth.text import Lengths
from traces.tokenizers import load_tokenizer

ROOT = Path(__file__).resolve().parents[3]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for _, raw in iter_lines(path)]


def test_plan_has_the_official_counts_at_scale_1() -> None:
    p = plan(seed=0, scale=1.0)
    assert (len(p.coding_turns), len(p.workflow_turns)) == (113, 500)
    assert p.trajectories == 613
    assert p.client_turns == OFFICIAL_CLIENT_TURNS == 30_335
    assert p.assistant_turns == 30_328 and len(p.open_ended) == 7
    assert statistics.mean(p.coding_turns) > 2 * statistics.mean(p.workflow_turns)  # coding is deeper


@pytest.mark.parametrize("seed", [1, 7, 12345])
def test_plan_counts_do_not_depend_on_the_seed(seed: int) -> None:
    p = plan(seed=seed, scale=1.0)
    assert (p.trajectories, p.client_turns, p.assistant_turns) == (613, 30_335, 30_328)


def test_scale_must_be_positive() -> None:
    with pytest.raises(TraceError, match="--scale must be > 0"):
        plan(scale=0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "tiny.jsonl"
    synthesize(out, seed=3, scale=0.02)
    return out


def test_tiny_set_matches_its_plan_and_validates(tiny: Path) -> None:
    p = plan(seed=3, scale=0.02)
    rows = _rows(tiny)
    client = sum(r["role"] in ("user", "tool") for r in rows)
    assistant = sum(r["role"] == "assistant" for r in rows)
    assert (client, assistant) == (p.client_turns, p.assistant_turns)
    n_traj, n_turns, errors = validate_sources([str(tiny)], "mlperf-jsonl")
    assert errors == [] and (n_traj, n_turns) == (p.trajectories, p.client_turns)


def test_domain_split_and_shapes(tiny: Path) -> None:
    by: dict[str, list[dict[str, Any]]] = {}
    for r in _rows(tiny):
        by.setdefault(r["conversation_id"], []).append(r)
    flows = {k: v for k, v in by.items() if k.startswith("sim_")}
    coding = {k: v for k, v in by.items() if not k.startswith("sim_")}
    assert len(flows) == 10 and len(coding) == 2
    assert sorted(flows) == [f"sim_{i:03d}" for i in range(1, 11)]
    assert all("__" in k for k in coding)
    for rows in coding.values():
        assert [t["function"]["name"] for t in rows[0]["tools"]] == ["bash"]
        assert all(r.get("intent_codes") is None for r in rows)
        calls = [c for r in rows if r["role"] == "assistant" for c in r["tool_calls"]]
        assert all("command" in json.loads(c["function"]["arguments"]) for c in calls)
    systems = {v[0]["system"] for v in flows.values()}
    assert len(systems) == 1 and len(next(iter(systems))) > 10_000  # one large shared prompt
    assert all(len(v[0]["tools"]) >= 24 for v in flows.values())
    for rows in flows.values():
        for r in rows:
            if r["role"] == "assistant":
                assert r["intent_codes"] and all(c.startswith("I") and len(c) == 4 for c in r["intent_codes"])
            if r["role"] == "tool":
                json.loads(r["tool_results"][0]["content"])  # tool results are JSON


def test_same_seed_same_bytes_other_seed_other_bytes(tiny: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    synthesize(again, seed=3, scale=0.02)
    assert again.read_bytes() == tiny.read_bytes()
    other = tmp_path / "other.jsonl"
    synthesize(other, seed=4, scale=0.02)
    assert other.read_bytes() != tiny.read_bytes()


def test_zst_suffix_compresses_the_same_rows(tiny: Path, tmp_path: Path) -> None:
    z = tmp_path / "tiny.jsonl.zst"
    synthesize(z, seed=3, scale=0.02)
    assert z.stat().st_size < tiny.stat().st_size / 3
    assert _rows(z) == _rows(tiny)
    assert not list(tmp_path.glob("*.partial-*"))


def test_delays_coding_like_the_fixture_workflow_users_think_longer(tiny: Path) -> None:
    import random

    rng = random.Random(0)
    draws = sorted(tool_delay(rng) for _ in range(20_000))
    for q, v in TOOL_DELAY_QUANTILES[1:-1]:
        if q <= 0.95:
            assert draws[int(q * len(draws))] == pytest.approx(v, rel=0.25)
    rows = _rows(tiny)
    user = [r["delay_seconds"] for r in rows if r["role"] == "user" and "delay_seconds" in r]
    tool = [r["delay_seconds"] for r in rows if r["role"] == "tool"]
    assert user and statistics.median(user) > 10 * statistics.median(tool)
    assert all(d >= 0 for d in user + tool)


def test_cli_synth_writes_and_reports(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cli import cli

    res = CliRunner().invoke(cli, ["traces", "synth", "--out", str(tmp_path / "d.jsonl"), "--scale", "0.01"])
    assert res.exit_code == 0, res.output
    assert "trajectories" in res.output and (tmp_path / "d.jsonl").is_file()


@pytest.mark.slow
def test_full_scale_file_has_the_exact_official_counts(tmp_path: Path) -> None:
    out = tmp_path / "full.jsonl.zst"
    res = synthesize(out, seed=0, scale=1.0)
    roles: dict[str, int] = {}
    ids: set[str] = set()
    last: dict[str, str] = {}
    for _, raw in iter_lines(out):
        r = json.loads(raw)
        roles[r["role"]] = roles.get(r["role"], 0) + 1
        ids.add(r["conversation_id"])
        last[r["conversation_id"]] = r["role"]
    assert len(ids) == 613 and sum(i.startswith("sim_") for i in ids) == 500
    assert roles["user"] + roles["tool"] == 30_335 and roles["assistant"] == 30_328
    assert sum(role != "assistant" for role in last.values()) == 7
    assert (res.client_turns, res.assistant_turns, res.trajectories) == (30_335, 30_328, 613)


def test_same_seed_same_bytes_under_any_hash_seed(tmp_path: Path) -> None:
    code = "import sys; from traces.synth import synthesize; synthesize(sys.argv[1], seed=2, scale=0.01)"
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"h{hash_seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, env=env, check=True, timeout=60)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_stratified_lengths_keep_the_spread_and_pin_the_mean() -> None:
    import random

    def block_means(stratified: bool) -> list[float]:
        out = []
        for seed in range(300):
            draw = Lengths(random.Random(seed), 400, 1.0, lo=12, hi=6000)
            rng = random.Random(seed)
            out.append(
                statistics.mean(draw() if stratified else draw.median * rng.lognormvariate(0, 1.0) for _ in range(16))
            )
        return out

    strat, iid = block_means(True), block_means(False)
    assert statistics.mean(strat) == pytest.approx(400, rel=0.05)
    # A block of 16 takes one draw from each sixteenth of the lognormal: its mean varies far
    # less than that of 16 independent draws, which is what keeps a small set inside the band.
    assert statistics.stdev(strat) < 0.5 * statistics.stdev(iid)
    draw = Lengths(random.Random(0), 400, 1.0, lo=12, hi=6000)
    single = [draw() for _ in range(640)]
    assert min(single) < 60 and max(single) > 2500  # single answers: short and very long ones


def _answer_chars_tokens(row: dict[str, Any]) -> int:
    """The simulator's count (docs/metrics.md fallback, 4 characters per token) of one answer."""
    calls = row.get("tool_calls") or []
    return sum(-(-len(row.get(k) or "") // 4) for k in ("reasoning_content", "content")) + sum(
        1 + -(-len(c["function"]["arguments"]) // 4) for c in calls
    )


def test_expected_osl_of_a_small_build_is_in_the_reference_band(tiny: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "shards"
    build_shards([str(tiny)], out, BuildOptions(name="tiny"), counter=load_tokenizer("qwen3.6"))
    cols: dict[str, list[Any]] = {"domain": [], "expected_osl_tokens": [], "expected_json": []}
    for f in sorted(out.glob("*.parquet")):
        part = pq.read_table(f, columns=list(cols)).to_pydict()
        for k in cols:
            cols[k] += part[k]
    osl = [(d, n, json.loads(e)) for d, n, e in zip(*cols.values(), strict=True) if n is not None]
    band = get_profile("kimi-k3").thresholds
    assert band.osl_min is not None and band.osl_max is not None
    mean = statistics.mean(n for _, n, _ in osl)
    assert band.osl_min <= mean <= band.osl_max, mean  # Kimi K3: 390-475 tokens per turn
    assert band.osl_min <= statistics.mean(_answer_chars_tokens(e) for _, _, e in osl) <= band.osl_max
    for domain in ("coding", "workflow"):
        per = [n for d, n, _ in osl if d == domain]
        assert 330 <= statistics.mean(per) <= 530, (domain, statistics.mean(per))
    lengths = sorted(n for _, n, _ in osl)
    assert lengths[len(lengths) // 20] < 160 and lengths[-len(lengths) // 50] > 1000  # long-tailed
    finals = [e for d, _, e in osl if d == "workflow" and not e.get("tool_calls")]
    assert finals and statistics.mean(len(e["content"]) for e in finals) < statistics.mean(
        len(e["reasoning_content"]) for e in finals
    )


def test_answers_state_what_the_inline_scorer_reads(tiny: Path) -> None:
    rows = [r for r in _rows(tiny) if r["role"] == "assistant"]
    flows = [r for r in rows if r["conversation_id"].startswith("sim_")]
    coding = [r for r in rows if not r["conversation_id"].startswith("sim_")]
    assert flows and coding
    assert all(model_intent(r.get("reasoning_content"), r.get("content")) == r["intent_codes"][0] for r in flows)
    assert all(message_actions(r["tool_calls"]) for r in coding)
    assert all(r["reasoning_content"].strip() for r in rows)
