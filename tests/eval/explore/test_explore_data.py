"""The explorer's data: submission trees read through one loader, sweeps and run folders found by
their files, every point's verdict (reviewed, failed, research, unknown), rolling submissions,
the system fields that normalise, and the folder written whole and byte-identical."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from clirun import trajbench
from explore_trees import description, make_run, make_submission, make_sweep, passing_review

from eval import EvalError
from eval.explore import (
    ExploreData,
    ExplorePoint,
    build_explorer,
    discover,
    explore_data,
    load_submission,
)
from replay import Gates, Slo

SCENARIO = "closed/acme/results/box8/agentic/c{:04d}"


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


# ---------------------------------------------------------------- the submission loader


def test_a_submission_tree_is_read_from_its_files(tmp_path: Path) -> None:
    root = make_submission(
        tmp_path / "sub",
        description=description(),
        review=passing_review(SCENARIO.format(1)),
        engine={"name": "vllm", "version": "0.9.1"},
    )
    sub = load_submission(root)
    assert (sub.manifest.submitter, sub.manifest.system, sub.manifest.profile) == ("acme", "box8", "kimi-k3")
    assert sub.manifest.engine_name() == "vllm 0.9.1"
    assert [d.parent.name for d in sub.run_dirs] == ["c0001", "c0004", "c0016"]
    assert sub.description is not None and sub.description.accelerators() == 8
    assert sub.description_file == "closed/acme/systems/box8.json"
    assert sub.seal_of(sub.run_dirs[1]) == f"sha256:{4:064x}"
    # a check naming the scenario applies to its point only; one naming no run folder to all
    assert [c.check for c in sub.checks_of(sub.run_dirs[0])] == ["cache exploit audit", "swebench"]
    assert [c.check for c in sub.checks_of(sub.run_dirs[1])] == ["swebench"]


def test_the_checker_fields_alone_give_the_accelerators(tmp_path: Path) -> None:
    """A description with only the checker's fields: nodes × accelerators per node, the
    scaffold's TODO placeholders read as not given, no price or power."""
    desc = {"accelerator_model_name": "TODO: model", "accelerators_per_node": "4", "number_of_nodes": "2"}
    root = make_submission(tmp_path / "sub", description=desc)
    d = load_submission(root).description
    assert d is not None and d.accelerators() == 8 and d.accelerator() is None
    data = explore_data(discover([root]), official).data
    (system,) = data.systems
    assert (system.accelerators, system.accelerator, system.price_per_hour, system.power_watts) == (8, None, None, None)
    assert system.description == (
        "closed/acme/systems/box8.json: gives no accelerator type, no price per hour, no power"
    )


def test_a_broken_submission_file_names_the_file_and_the_field(tmp_path: Path) -> None:
    root = make_submission(tmp_path / "sub", description=description(price_per_hour_usd="cheap"))
    with pytest.raises(EvalError, match=r"systems/box8\.json: price_per_hour_usd: expected a number"):
        load_submission(root)
    (root / "trajbench-submission.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalError, match=r"trajbench-submission\.json: not valid JSON"):
        load_submission(root)


def test_a_submission_without_a_run_folder_is_refused(tmp_path: Path) -> None:
    root = make_submission(tmp_path / "sub")
    for run in load_submission(root).run_dirs:
        shutil.rmtree(run)
    with pytest.raises(EvalError, match="no finished run folder"):
        load_submission(root)


# ---------------------------------------------------------------- finding the inputs


def test_one_folder_holding_every_kind_of_input(tmp_path: Path) -> None:
    inputs = tmp_path / "results"
    make_submission(inputs / "acme-2026-02", description=description())
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


def test_every_verdict(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    make_submission(inputs / "reviewed", review=passing_review(), concurrencies=(1, 4))
    failing = {
        "passed": False,
        "checks": [
            {
                "point": "closed/beta/results/rack/agentic/c0004",
                "check": "cache exploit",
                "passed": False,
                "reason": "x",
            }
        ],
    }
    make_submission(inputs / "failed", submitter="beta", system="rack", review=failing, concurrencies=(1, 4))
    make_submission(inputs / "unreviewed", submitter="gamma", system="solo", concurrencies=(1,))
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
    assert pts["beta-rack.c4"].reasons == ["review: cache exploit: x"]
    assert pts["beta-rack.c1"].reasons == ["review: the submission failed its review (failed/review.json)"]
    assert pts["gamma-solo.c1"].reasons == ["inline accuracy 0.2 is below the bar"]
    assert "simulator" in pts["sim.c1"].reasons[0]
    assert pts["userprof.c1"].reasons == ["user profile kimi-k3: its gates are its author's, not the benchmark's"]
    assert pts["dataset-gates.c1"].reasons == ["research gates: dataset-derived — not an official result"]
    assert [a.check for a in pts["acme-box8.c1"].audits] == ["swebench"]


def test_a_point_with_no_review_and_no_gate_is_unknown(tmp_path: Path) -> None:
    make_sweep(tmp_path / "s", [1])
    (p,) = explore_data(discover([tmp_path / "s"]), None).data.points
    assert (p.verdict, p.reasons, p.audits) == ("unknown", [], [])


# ---------------------------------------------------------------- history, fields


def test_a_rolling_submission_keeps_the_latest_run_and_marks_the_replaced(tmp_path: Path) -> None:
    make_submission(tmp_path / "in" / "jan", date="2026-01-10", concurrencies=(1, 4), speed=1.0)
    make_submission(tmp_path / "in" / "mar", date="2026-03-10", concurrencies=(4, 16), speed=1.5)
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
    assert old.run.endswith("jan/closed/acme/results/box8/agentic/c0004/trajbench")


def test_normalising_figures_and_goodput_slos(tmp_path: Path) -> None:
    slo = Slo(ttft_ms=2000.0, tpot_ms=None, session_s=60.0)
    make_submission(tmp_path / "in", description=description(), concurrencies=(1,), slo=slo, engine="sglang 0.5")
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
def inputs(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    make_submission(root / "sub", description=description(), review=passing_review(SCENARIO.format(1)))
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
        assert p["page"] in files and files[p["page"]].startswith(b"run at C=")


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
