"""SWE-bench instance ids and repos name folders (the run's per-instance folder, the task
repository under --repos), so an id like `/abs/path` or `../..` must be refused when the dataset
is loaded, and no instance path may ever leave its folder."""

from __future__ import annotations

from pathlib import Path

import fake_extra
import pytest
from toy import instance, write_jsonl

import cli
from eval.swebench import SwebenchError
from eval.swebench.dataset import load_instances
from eval.swebench.summary import instance_dir

BAD_IDS = [
    "/abs/path",
    "../..",
    "..",
    "a/b",
    "django__django-11099/../../x",
    "django__django",
    "__x-1",
    "x__y-1\n",
    "",
    "sim_001",
]
REAL_IDS = [
    "django__django-11099",
    "scikit-learn__scikit-learn-10297",
    "sphinx-doc__sphinx-10323",
    "pylint-dev__pylint-4970",
    "psf__requests-1142",
    "pydata__xarray-2905",
]


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize("iid", BAD_IDS)
def test_a_bad_instance_id_is_refused_naming_the_row(tmp_path: Path, iid: str) -> None:
    rows = [instance("toy__calc-1", "fix", "0" * 40), instance(iid, "fix", "0" * 40)]
    if iid == "":
        rows[1]["instance_id"] = "  "  # an empty id is reported as missing; a blank one by the pattern
        iid = "  "
    dataset = write_jsonl(tmp_path / "v.jsonl", rows)
    with pytest.raises(SwebenchError) as exc:
        load_instances(dataset, 2)
    assert str(exc.value) == (
        f"{dataset}: row 2: instance_id {iid!r} is not a SWE-bench instance id (owner__repo-NUMBER, "
        "e.g. django__django-11099); it names folders of the run, so fix the dataset"
    )


@pytest.mark.parametrize("repo", ["../../etc", "/abs", "a/b/c", "a/..", "django"])
def test_a_bad_repo_is_refused(tmp_path: Path, repo: str) -> None:
    dataset = write_jsonl(tmp_path / "v.jsonl", [instance("toy__calc-1", "fix", "0" * 40, repo=repo)])
    with pytest.raises(SwebenchError, match=rf"row 1: instance toy__calc-1: repo '{repo}' is not a GitHub owner/name"):
        load_instances(dataset, 1)


def test_real_swebench_ids_are_accepted(tmp_path: Path) -> None:
    dataset = write_jsonl(tmp_path / "v.jsonl", [instance(iid, "fix", "0" * 40, repo="o/n") for iid in REAL_IDS])
    assert [r["instance_id"] for r in load_instances(dataset, len(REAL_IDS))] == REAL_IDS


@pytest.mark.parametrize("name", ["/abs/path", "../..", "..", ".", "a/b", ""])
def test_instance_paths_stay_inside_their_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(SwebenchError, match="would be read or written outside"):
        instance_dir(tmp_path, name)


def test_a_link_out_of_the_run_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "django__django-1").symlink_to(tmp_path)
    with pytest.raises(SwebenchError, match="would be read or written outside"):
        instance_dir(out, "django__django-1")
    (out / "inside").mkdir()
    (out / "django__django-2").symlink_to("inside")
    assert instance_dir(out, "django__django-2") == out / "django__django-2"


def test_cli_refuses_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_extra.present(monkeypatch)  # the dataset is refused before the extra is used: the same everywhere
    work = tmp_path / "work"
    (work / "repos").mkdir(parents=True)
    dataset = write_jsonl(work / "v.jsonl", [instance("../../escaped", "fix", "0" * 40)])
    before = _tree(tmp_path)
    argv = ["eval", "swebench", "--dataset", str(dataset), "--endpoint", "http://127.0.0.1:9", "--profile", "kimi-k3"]
    with pytest.raises(SystemExit) as ended:
        cli.main(
            [
                *argv,
                "--instances",
                "1",
                "--runtime",
                "local",
                "--repos",
                str(work / "repos"),
                "--out",
                str(work / "out"),
            ]
        )
    assert ended.value.code == 1
    assert capsys.readouterr().err == (
        f"Error: {dataset}: row 1: instance_id '../../escaped' is not a SWE-bench instance id (owner__repo-NUMBER, e.g. django__django-11099); it names folders of the run, so fix the dataset\n"
    )
    assert _tree(tmp_path) == before
