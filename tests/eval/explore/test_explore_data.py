"""The explorer's data: submission trees (written by the real `trajbench submit`) read through the
submission room's typed files, sweeps and run folders found by their files, every point's
verdict (reviewed, failed, research, unknown), rolling submissions, the system fields that
normalise, and the folder written whole and byte-identical."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from clirun import trajbench
from explore_trees import (
    WHOLE,
    Submitter,
    hardware,
    make_run,
    make_sweep,
    passing_review,
    point_path,
    write_review,
)

import traces
from eval import EvalError, review
from eval.explore import (
    ExploreData,
    ExplorePoint,
    build_explorer,
    discover,
    explore_data,
    load_submission,
)
from eval.submission import SubmissionManifest
from replay import Gates, Slo

RESULTS = "closed/acme/results/box8/kimi-k3"


def data_of(site: Path) -> dict[str, Any]:
    text = (site / "data.js").read_text(encoding="utf-8")
    prefix = "window.TRAJBENCH_EXPLORE = "
    body = text[text.index(prefix) + len(prefix) :].rstrip().removesuffix(";")
    loaded: dict[str, Any] = json.loads(body)
    return loaded


def points_of(data: ExploreData) -> dict[str, ExplorePoint]:
    return {p.id: p for p in data.points}


def official(run_dir: Path) -> Gates:
    return Gates(0.6, True, 420.0, True, "official", "official")


def edit_json(path: Path, edit: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


# ---------------------------------------------------------------- the submission loader


def test_a_submission_tree_is_read_from_the_files_submit_wrote(trees: Submitter, tmp_path: Path) -> None:
    root = trees.submission(tmp_path / "sub", engine_says="vllm 0.9.1")
    passing_review(root, 1)
    sub = load_submission(root)
    assert sub.manifest == SubmissionManifest.read(root)
    assert (sub.manifest.submitter, sub.manifest.system, sub.manifest.profile) == ("acme", "box8", "kimi-k3")
    assert sub.engines() == ["vllm 0.9.1"]  # run.json's engine identity, as the manifest copies it
    assert [d.relative_to(root).as_posix() for d in sub.run_dirs] == [
        f"{RESULTS}/online-c{c:04d}/trajbench" for c in (1, 4, 16)
    ]
    assert sub.description is not None and sub.description.hardware.accelerator_count == 8
    assert sub.description_file == "closed/acme/systems/box8.json"
    assert sub.seal_of(sub.run_dirs[1]) == traces.sha256_file(sub.run_dirs[1] / "seal.json")
    # a check naming the point's scenario folder is its own; one naming no point is everyone's
    assert [c.check for c in sub.checks_of(sub.run_dirs[0])] == ["cache-exploit", "swebench"]
    assert [c.check for c in sub.checks_of(sub.run_dirs[1])] == ["swebench"]
    (system,) = explore_data(discover([root]), official).data.systems
    assert (system.engine, system.division, system.review) == ("vllm 0.9.1", "closed", "passed")
    assert system.swebench_mean == pytest.approx(0.71)


def test_a_description_without_price_or_power_and_a_missing_one(trees: Submitter, tmp_path: Path) -> None:
    """price and power not disclosed (null): the system is not drawn per dollar or per watt, and
    the explorer says so; with no engine identity the engine is the description's framework."""
    root = trees.submission(tmp_path / "sub", trajbench=hardware(price_per_hour_usd=None, power_watts=None))
    (system,) = explore_data(discover([root]), official).data.systems
    assert (system.accelerators, system.accelerator, system.price_per_hour, system.power_watts) == (
        8,
        "H200",
        None,
        None,
    )
    assert system.description == "closed/acme/systems/box8.json: gives no price per hour, no power"
    assert system.engine == "vLLM 0.32.0"
    (root / "closed/acme/systems/box8.json").unlink()
    (system,) = explore_data(discover([root]), official).data.systems
    assert (system.accelerators, system.engine) == (None, None)
    assert system.description == "no system description (closed/acme/systems/box8.json is missing)"


def test_a_broken_submission_file_names_the_file_and_the_field(trees: Submitter, tmp_path: Path) -> None:
    built = trees.submission(tmp_path / "built", concurrencies=(1, 4))
    passing_review(built)

    def broken(name: str) -> Path:
        return Path(shutil.copytree(built, tmp_path / name))

    root = broken("price")
    edit_json(root / "closed/acme/systems/box8.json", lambda d: d["trajbench"].update(price_per_hour_usd="cheap"))
    with pytest.raises(EvalError, match=r"systems/box8\.json: trajbench: price_per_hour_usd: expected a number"):
        load_submission(root)
    root = broken("manifest")
    (root / "trajbench-submission.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalError, match=r"trajbench-submission\.json: not readable JSON"):
        load_submission(root)
    root = broken("field")
    edit_json(root / "trajbench-submission.json", lambda d: d["points"][1].update(concurrency="four"))
    with pytest.raises(EvalError, match=r"trajbench-submission\.json: points\[1\]\.concurrency: expected"):
        load_submission(root)
    root = broken("elsewhere")  # a manifest naming a folder outside the layout could lead out of the tree
    edit_json(root / "trajbench-submission.json", lambda d: d["points"][0].update(run="../../elsewhere"))
    with pytest.raises(
        EvalError,
        match=r"points\[0\]\.run: '\.\./\.\./elsewhere' is not where the layout puts the point at concurrency 1",
    ):
        load_submission(root)
    root = broken("engine")
    edit_json(root / "trajbench-submission.json", lambda d: d["points"][0].update(engine={"engine": "vllm"}))
    with pytest.raises(EvalError, match=r"points\[0\]\.engine: the field 'models' is missing"):
        load_submission(root)
    root = broken("review")
    edit_json(root / "review.json", lambda d: d.update(passed="yes"))
    with pytest.raises(EvalError, match=r"review\.json: passed: expected"):
        load_submission(root)
    root = broken("other-review")  # a review of another submission never vouches for this one
    edit_json(root / "review.json", lambda d: d.update(submission_date="2025-12-01"))
    with pytest.raises(EvalError, match=r"review\.json: submission_date: '2025-12-01', but the submission's is"):
        load_submission(root)
    root = broken("stale-review")  # the tree changed after its review: the review vouches for nothing now
    edit_json(root / "trajbench-submission.json", lambda d: d.update(swebench=None))
    with pytest.raises(EvalError, match=r"the tree changed after its review; review it again"):
        load_submission(root)
    res = trajbench("explore", str(tmp_path / "review"), "--out", str(tmp_path / "site"))
    assert res.code == 1 and "Traceback" not in res.err and "review.json: passed: expected" in res.err


def test_a_point_whose_run_folder_is_gone_is_refused(trees: Submitter, tmp_path: Path) -> None:
    root = trees.submission(tmp_path / "sub")
    shutil.rmtree(load_submission(root).run_dirs[1])
    with pytest.raises(
        EvalError, match=rf"points\[1\]\.run: {RESULTS}/online-c0004/trajbench is not a finished run folder"
    ):
        load_submission(root)


# ---------------------------------------------------------------- finding the inputs


def test_one_folder_holding_every_kind_of_input(trees: Submitter, tmp_path: Path) -> None:
    inputs = tmp_path / "results"
    trees.submission(inputs / "acme-2026-02")
    make_sweep(inputs / "lab" / "sweepA", [1, 2])
    make_run(inputs / "lab" / "one-run", 8)
    sources = discover([inputs])
    assert [(s.label, s.kind, len(s.folders)) for s in sources] == [
        ("acme / box8", "submission", 3),
        ("lab/one-run", "run", 1),
        ("lab/sweepA", "sweep", 1),
    ]


def test_labels_join_folders_into_one_system(tmp_path: Path) -> None:
    a = make_sweep(tmp_path / "a", [1, 2])
    b = make_run(tmp_path / "b", 4)
    (source,) = discover([], [("mine", a), ("mine", b)])
    assert source.label == "mine" and source.folders == (a, b)
    # a labelled folder inside a folder given to search is the labelled system's, not one of its own
    make_sweep(tmp_path / "c", [1])
    assert [s.label for s in discover([tmp_path], [("mine", a), ("mine", b)])] == ["c", "mine"]


def test_inputs_that_are_nothing_are_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(EvalError, match=r"empty: no submission tree .* sweep folder .* or finished run folder"):
        discover([tmp_path / "empty"])
    with pytest.raises(EvalError, match=r"--label x=.*empty: neither a sweep folder"):
        discover([], [("x", tmp_path / "empty")])


def test_two_folders_of_one_name_must_be_labelled(tmp_path: Path) -> None:
    make_sweep(tmp_path / "one" / "sys", [1])
    make_sweep(tmp_path / "two" / "sys", [1])
    with pytest.raises(EvalError, match=r"two folders would both be the system 'sys'.*--label"):
        discover([tmp_path / "one" / "sys", tmp_path / "two" / "sys"])


# ---------------------------------------------------------------- verdicts


def test_every_verdict(trees: Submitter, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    passing_review(trees.submission(inputs / "reviewed", concurrencies=(1, 4)))
    failed = trees.submission(inputs / "failed", submitter="beta", system="rack", concurrencies=(1, 4))
    write_review(failed, [(4, "cache-exploit", False, "x"), (None, "swebench", True, "mean 71.0%")])
    trees.submission(inputs / "unreviewed", submitter="gamma", system="solo", concurrencies=(1,))
    make_sweep(inputs / "sim", [1], target="simulated", target_evidence="embedded")
    make_sweep(inputs / "userprof", [1], profile_built_in=False)
    make_sweep(inputs / "dataset-gates", [1, 2])

    def gates(run_dir: Path) -> Gates:
        if "dataset-gates" in run_dir.parts:
            note = "research gates: dataset-derived — not an official result"
            return Gates(0.6, True, 400.0, True, "dataset", "dataset", note)
        if "gamma" in run_dir.parts:
            return Gates(0.2, False, 400.0, True, "official", "official")
        return official(run_dir)

    pts = points_of(explore_data(discover([inputs]), gates).data)
    verdicts = {pid: (p.verdict, p.research) for pid, p in pts.items()}
    assert verdicts == {
        "acme-box8.c1": ("reviewed", False),
        "acme-box8.c4": ("reviewed", False),
        "beta-rack.c1": ("failed", False),  # the submission failed its review
        "beta-rack.c4": ("failed", False),  # its own check failed
        "gamma-solo.c1": ("failed", False),  # inline accuracy below the bar
        "sim.c1": ("research", True),
        "userprof.c1": ("research", True),
        "dataset-gates.c1": ("research", True),
        "dataset-gates.c2": ("research", True),
    }
    assert pts["beta-rack.c4"].reasons == ["review: cache-exploit: x"]
    assert pts["beta-rack.c1"].reasons == ["review: the submission failed its review (failed/review.json)"]
    assert pts["gamma-solo.c1"].reasons == ["inline accuracy 0.2 is below the bar"]
    assert "simulator" in pts["sim.c1"].reasons[0]
    assert pts["userprof.c1"].reasons == ["user profile kimi-k3: its gates are its author's, not the benchmark's"]
    assert pts["dataset-gates.c1"].reasons == ["research gates: dataset-derived — not an official result"]
    assert [a.check for a in pts["acme-box8.c1"].audits] == ["swebench"]


@pytest.mark.slow
def test_the_real_reviews_verdict_is_the_explorers(trees: Submitter, tmp_path: Path, sample_shards: Path) -> None:
    """review.json as `trajbench review` writes it: each point's verdict follows the review's, and
    its audits are the review's checks of its scenario folder, then the submission's."""
    root = trees.submission(tmp_path / "in" / "sub", concurrencies=(1, 4))
    report = review(root, shards=sample_shards, expected_hash=traces.Shards(sample_shards).content_hash).report
    assert report.total > 0 and {c.point for c in report.checks} >= {WHOLE, point_path(root, 1), point_path(root, 4)}
    pts = points_of(explore_data(discover([tmp_path / "in"]), official).data)
    for c in (1, 4):
        p = pts[f"acme-box8.c{c}"]
        mine = [x for x in report.checks if x.point in (point_path(root, c), WHOLE)]
        assert [(a.check, a.passed, a.reason) for a in p.audits] == [(x.check, x.passed, x.reason) for x in mine]
        # the trees' SWE-bench runs (a 71 % mean, written before engine identities) fail it: so must the point
        assert {(f.point, f.check) for f in report.failures()} == {(WHOLE, "swebench"), (WHOLE, "same-model")}
        assert p.verdict == "failed"


def test_a_point_with_no_review_and_no_gate_is_unknown(tmp_path: Path) -> None:
    make_sweep(tmp_path / "s", [1])
    (p,) = explore_data(discover([tmp_path / "s"]), None).data.points
    assert (p.verdict, p.reasons, p.audits) == ("unknown", [], [])


# ---------------------------------------------------------------- history, fields


def test_a_rolling_submission_keeps_the_latest_run_and_marks_the_replaced(trees: Submitter, tmp_path: Path) -> None:
    trees.submission(tmp_path / "in" / "jan", date="2026-01-10", concurrencies=(1, 4), speed=1.0)
    trees.submission(tmp_path / "in" / "mar", date="2026-03-10", concurrencies=(4, 16), speed=1.5)
    data = explore_data(discover([tmp_path / "in"]), official).data
    (system,) = data.systems
    assert system.date == "2026-03-10" and system.sources == [
        (tmp_path / "in" / "jan").as_posix(),
        (tmp_path / "in" / "mar").as_posix(),
    ]
    pts = points_of(data)
    assert sorted(pts) == ["acme-box8.c1", "acme-box8.c16", "acme-box8.c4", "acme-box8.c4.r1"]
    assert (pts["acme-box8.c4"].added, pts["acme-box8.c4"].current) == ("2026-03-10", True)
    old = pts["acme-box8.c4.r1"]
    assert (old.added, old.current, old.replaced_by) == ("2026-01-10", False, "acme-box8.c4")
    assert old.run.endswith(f"jan/{RESULTS}/online-c0004/trajbench")
    assert pts["acme-box8.c4"].throughput_tps == pytest.approx(1.5 * old.throughput_tps)


def test_normalising_figures_and_goodput_slos(trees: Submitter, tmp_path: Path) -> None:
    slo = Slo(ttft_ms=2000.0, tpot_ms=None, session_s=60.0)
    trees.submission(tmp_path / "in", concurrencies=(1,), slo=slo, engine_says="sglang 0.5")
    data = explore_data(discover([tmp_path / "in"]), official).data
    (s,) = data.systems
    assert (s.accelerator, s.accelerators, s.price_per_hour, s.power_watts, s.engine) == (
        "H200",
        8,
        32.0,
        6400.0,
        "sglang 0.5",
    )
    assert s.description == "closed/acme/systems/box8.json: gives every figure"
    (p,) = data.points
    assert p.goodput_slo == "TTFT 2000 ms"  # a session limit changes no turn's verdict
    assert p.session_goodput_slo == "TTFT 2000 ms, session 60 s"
    assert p.goodput_tps == pytest.approx(p.throughput_tps)


def test_a_sweep_has_no_description_and_says_so(tmp_path: Path) -> None:
    make_sweep(tmp_path / "s", [1])
    (s,) = explore_data(discover([tmp_path / "s"]), None).data.systems
    assert (s.accelerators, s.price_per_hour, s.power_watts) == (None, None, None)
    assert s.description.startswith("no system description: a sweep folder")


# ---------------------------------------------------------------- the folder


@pytest.fixture
def inputs(trees: Submitter, tmp_path: Path) -> Path:
    root = tmp_path / "in"
    passing_review(trees.submission(root / "sub"), 1)
    make_sweep(root / "sweeps" / "lab", [1, 2, 4])
    return root


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_folder_is_self_contained_and_the_same_bytes_every_time(inputs: Path, tmp_path: Path) -> None:
    one = build_explorer([inputs], tmp_path / "one", gates_of=official)
    build_explorer([inputs], tmp_path / "two", gates_of=official)
    assert (one.systems, one.points, one.failed) == (2, 6, 0)
    files = _files(tmp_path / "one")
    assert files == _files(tmp_path / "two")
    assert sorted(f for f in files if "/" not in f) == ["data.js", "explore.css", "explore.js", "index.html"]
    page = files["index.html"].decode()
    # nothing is fetched from anywhere: the page's scripts and style are its own files
    assert '<script src="data.js">' in page and '<script src="explore.js">' in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert "http" not in files["explore.js"].decode().replace("http://www.w3.org/2000/svg", "")
    data = data_of(tmp_path / "one")
    assert [s["id"] for s in data["systems"]] == ["acme-box8", "sweeps-lab"]
    for p in data["points"]:  # each run's own report travels with the site
        assert files[p["page"]] == (Path(p["run"]) / "report.txt").read_bytes()


def test_a_rebuild_replaces_an_explorer_and_nothing_else(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_explorer([inputs], out, gates_of=official)
    (out / "stale.txt").write_text("from an older build", encoding="utf-8")
    build_explorer([inputs], out, gates_of=official)
    assert not (out / "stale.txt").exists()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(EvalError, match="holds something other than an explorer"):
        build_explorer([inputs], other, gates_of=official)
    assert (other / "notes.txt").read_text(encoding="utf-8") == "keep me"
    with pytest.raises(EvalError, match="holds the input"):
        build_explorer([inputs / "sweeps"], inputs, gates_of=official)


def test_a_failed_build_leaves_the_previous_explorer_whole(
    inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up part-way (the page's files are written, the run reports are not): the
    previous explorer is untouched and no half-built folder is left beside it."""
    out = tmp_path / "site"
    build_explorer([inputs], out, gates_of=official)
    before = _files(out)

    def full(src: Path, dst: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(shutil, "copyfile", full)
    with pytest.raises(OSError, match="No space left"):
        build_explorer([inputs], out, gates_of=official)
    assert _files(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


@pytest.mark.slow
def test_cli_explore(inputs: Path, tmp_path: Path) -> None:
    res = trajbench("explore", str(inputs), "--out", str(tmp_path / "site"))
    assert res.code == 0, res.err
    assert res.out.startswith(f"explorer: {tmp_path / 'site' / 'index.html'}: 2 system(s), 6 point(s)")
    res = trajbench("explore", str(tmp_path / "site"), "--out", str(tmp_path / "again"))
    assert res.code == 1 and "Traceback" not in res.err
    assert res.error_lines == [
        f"Error: {tmp_path / 'site'}: no submission tree (trajbench-submission.json), sweep folder (sweep.json) or "
        "finished run folder (run.json with its result summary) in it (docs/explore.md)"
    ]
