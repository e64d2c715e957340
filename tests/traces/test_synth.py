"""The synthetic dataset: exact official counts, determinism, validity, domain split, delays."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from traces import TraceError, validate_sources
from traces.io import iter_lines
from traces.synth import OFFICIAL_CLIENT_TURNS, plan, synthesize
from traces.synth_coding import TOOL_DELAY_QUANTILES, tool_delay


def _rows(path: Path) -> list[dict]:
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
    by: dict[str, list[dict]] = {}
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
