"""Run-folder bookkeeping: summary keys, the scores.json merge, the mean over region runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli import main
from eval.swebench import Provenance, SwebenchError, SwebenchSummary, swebench_mean
from eval.swebench.summary import build_summary, write_results


def _grade(out: Path, iid: str, status: str) -> None:
    (out / iid).mkdir(parents=True)
    (out / iid / "grade.json").write_text(json.dumps({"instance_id": iid, "status": status}))


def _run(out: Path, *, resolved: int, n: int = 200, profile: str = "qwen3.6-35b-a3b", incomplete: int = 0) -> Path:
    ids = [f"i{k}" for k in range(n)]
    for k, iid in enumerate(ids):
        if k < resolved:
            _grade(out, iid, "resolved")
        elif k < n - incomplete:
            _grade(out, iid, "unresolved")
    write_results(
        out, build_summary(out, ids, profile=profile, runtime="docker", concurrency=8, provenance=Provenance())
    )
    return out


def test_summary_has_the_compliance_keys_and_counts(tmp_path: Path) -> None:
    out = _run(tmp_path / "r", resolved=3, n=5, incomplete=1)
    s = json.loads((out / "swebench_summary.json").read_text())
    assert {
        "kind",
        "profile",
        "instances",
        "resolved",
        "incomplete",
        "score",
        "concurrency",
        "runtime",
        "instance_ids",
        "results",
    } <= s.keys()
    assert (s["kind"], s["instances"], s["resolved"], s["incomplete"], s["score"], s["concurrency"]) == (
        "swebench",
        5,
        3,
        1,
        0.6,
        8,
    )
    assert s["instance_ids"] == ["i0", "i1", "i2", "i3", "i4"]
    assert s["results"] == {
        "i0": "resolved",
        "i1": "resolved",
        "i2": "resolved",
        "i3": "unresolved",
        "i4": "incomplete",
    }


def test_the_summary_reads_back_as_written(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    written = build_summary(
        out,
        ["i0"],
        profile="kimi-k3",
        runtime="local",
        concurrency=None,
        provenance=Provenance(model="m", isolated=False),
    )
    write_results(out, written)
    assert SwebenchSummary.read(out) == written
    assert json.loads((out / "swebench_summary.json").read_text())["isolated"] is False  # provenance at the top level


def test_a_scores_json_that_is_not_json_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / "scores.json").write_text("{broken")
    with pytest.raises(SwebenchError, match=r"scores.json: not valid JSON .*; fix or remove it"):
        _run(out, resolved=1, n=2)
    assert (out / "scores.json").read_text() == "{broken"


def test_scores_json_is_merged_not_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / "scores.json").write_text(json.dumps({"score": 0.61, "turns": {"issued": 3}}))
    _run(out, resolved=1, n=2)
    scores = json.loads((out / "scores.json").read_text())
    assert scores["score"] == 0.61 and scores["turns"] == {"issued": 3}
    assert scores["swebench"]["score"] == 0.5 and scores["swebench"]["instances"] == 2


def test_mean_of_four_regions_against_threshold(tmp_path: Path) -> None:
    runs = [str(_run(tmp_path / f"r{k}", resolved=r)) for k, r in enumerate([140, 138, 142, 136])]
    res = swebench_mean(runs)
    assert res.mean == 0.695 and res.threshold == 0.69 and res.passed and res.notes == ()
    low = [str(_run(tmp_path / f"l{k}", resolved=130)) for k in range(4)]
    assert not swebench_mean(low).passed


def test_mean_notes_what_is_not_official(tmp_path: Path) -> None:
    res = swebench_mean([str(_run(tmp_path / "a", resolved=5, n=10, incomplete=2))])
    assert any("1 run(s)" in n for n in res.notes)
    assert any("10 instances" in n for n in res.notes)
    assert any("2 incomplete" in n for n in res.notes)


def test_mean_refuses_mixed_profiles_and_foreign_folders(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", resolved=1, n=2)
    b = _run(tmp_path / "b", resolved=1, n=2, profile="kimi-k3")
    with pytest.raises(SwebenchError, match="different profiles"):
        swebench_mean([str(a), str(b)])
    (tmp_path / "c").mkdir()
    with pytest.raises(SwebenchError, match=re.escape("swebench_summary.json: not found")):
        swebench_mean([str(tmp_path / "c")])


def test_cli_mean_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = [str(_run(tmp_path / f"g{k}", resolved=190, profile="kimi-k3")) for k in range(4)]
    main(["eval", "swebench-mean", *good])
    assert "mean 95.00% over 4 run(s); kimi-k3 threshold 93.50%: pass" in capsys.readouterr().out
    bad = [str(_run(tmp_path / f"b{k}", resolved=100, profile="kimi-k3")) for k in range(4)]
    with pytest.raises(SystemExit) as exc:
        main(["eval", "swebench-mean", *bad])
    assert exc.value.code == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.slow
def test_the_run_records_the_engine_and_a_resume_must_find_the_same_one(tmp_path: Path) -> None:
    """Who the endpoint says it is goes into the summary (the same-model audit compares it with the
    performance points', docs/audits.md); a resumed run against another engine is refused."""
    import traces
    from eval.swebench.run import CONFIG_FILE, SwebenchOptions, _engine_identity
    from replay.sim import start_simulator

    opts = SwebenchOptions(dataset="d.jsonl", endpoint="", profile="qwen3.6-35b-a3b", out=str(tmp_path), resume=True)
    with start_simulator(["--model", "served"]) as sim:
        opts = SwebenchOptions(**{**opts.__dict__, "endpoint": sim.base_url + "/v1"})
        found = _engine_identity(opts, tmp_path)
        assert (found.engine, found.models, found.version) == ("trajbench-sim", ["served"], traces.__version__)
        (tmp_path / CONFIG_FILE).write_text(json.dumps({"engine": {**traces.to_json(found), "version": "0.0.1"}}))
        with pytest.raises(
            SwebenchError,
            match=r"--resume must continue against the same engine, but the endpoint now says version '0\.0\.1' -> '",
        ):
            _engine_identity(opts, tmp_path)
