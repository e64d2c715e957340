"""`--overwrite` deletes only what trajbench wrote, and a build that is stopped (by an error, Ctrl-C
or SIGTERM) or killed leaves no temporary folder behind for long."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import interrupt_when, trajbench

from traces import BuildOptions, TraceError, build_shards
from traces.synth import synthesize

SAMPLE = Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl"


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".building-" in p.name or ".old-" in p.name)


def test_out_folder_holding_the_input_is_never_deleted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(SAMPLE, data / "x.jsonl")
    (data / "notes.txt").write_text("keep me")
    before = _tree(data)
    done = trajbench("traces", "build", "data/x.jsonl", "--out", "data", "--overwrite", cwd=tmp_path)
    assert done.code == 1 and "Traceback" not in done.err
    assert done.error_lines == [
        "Error: --out data: holds the input data/x.jsonl; --overwrite would delete it, so choose an --out outside the inputs' folders"
    ]
    assert _tree(data) == before
    assert _leftovers(tmp_path) == []


def test_a_shard_folder_that_holds_an_input_is_not_replaced_either(tmp_path: Path) -> None:
    shards = build_shards([str(SAMPLE)], tmp_path / "shards", BuildOptions()).out
    shutil.copy(SAMPLE, shards / "x.jsonl")
    with pytest.raises(TraceError, match="holds the input"):
        build_shards([str(shards / "x.jsonl")], shards, BuildOptions(), overwrite=True)
    assert (shards / "x.jsonl").is_file() and (shards / "manifest.json").is_file()


@pytest.mark.parametrize(
    "content",
    [{"notes.txt": "unrelated"}, {"manifest.json": json.dumps({"name": "someone else's"}), "data.bin": "x"}],
    ids=["plain-folder", "foreign-manifest"],
)
def test_a_folder_trajbench_did_not_write_is_refused(tmp_path: Path, content: dict[str, str]) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for name, text in content.items():
        (other / name).write_text(text)
    before = _tree(other)
    done = trajbench("traces", "build", str(SAMPLE), "--out", str(other), "--overwrite")
    assert done.code == 1
    assert done.error_lines == [
        f"Error: --out {other}: not a shard folder (no manifest.json written by trajbench); --overwrite replaces only a folder `trajbench traces build` wrote, so choose another --out (or empty this one yourself)"
    ]
    assert _tree(other) == before


def test_a_file_as_out_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("keep")
    with pytest.raises(TraceError, match="is a file, not a shard folder"):
        build_shards([str(SAMPLE)], f, BuildOptions(), overwrite=True)
    assert f.read_text() == "keep"


def test_a_shard_folder_and_an_empty_folder_are_replaced(tmp_path: Path) -> None:
    out = build_shards([str(SAMPLE)], tmp_path / "shards", BuildOptions(name="a")).out
    build_shards([str(SAMPLE)], out, BuildOptions(name="b"), overwrite=True)
    assert sorted(_tree(out)) == ["b-00000-of-00001.parquet", "manifest.json"]
    empty = tmp_path / "empty"
    empty.mkdir()
    build_shards([str(SAMPLE)], empty, BuildOptions(), overwrite=True)
    assert (empty / "manifest.json").is_file()
    assert _leftovers(tmp_path) == []


def test_stale_temporary_folders_of_dead_builds_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    for name in (f".shards.building-{dead}", f".shards.old-{dead}", ".shards.building-1", f".other.building-{dead}"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-00000.parquet").write_bytes(b"half")
    build_shards([str(SAMPLE)], tmp_path / "shards", BuildOptions())
    # pid 1 is alive (it may be a concurrent build); another folder's leftovers are not ours
    assert _leftovers(tmp_path) == [".other.building-" + dead, ".shards.building-1"]


@pytest.fixture(scope="module")
def bigger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset whose build takes a second or two: time to send a signal mid-build."""
    path = tmp_path_factory.mktemp("synth") / "syn.jsonl"
    synthesize(path, seed=3, scale=0.12)
    return path


@pytest.mark.parametrize(
    ("sig", "code", "said"), [(signal.SIGTERM, 143, "Terminated."), (signal.SIGINT, 130, "Aborted.")]
)
def test_a_signalled_build_leaves_nothing_behind(
    bigger: Path, tmp_path: Path, sig: signal.Signals, code: int, said: str
) -> None:
    out = tmp_path / "shards"
    done = interrupt_when(["traces", "build", str(bigger), "--out", str(out)], lambda: bool(_leftovers(tmp_path)), sig)
    assert done.code == code, done.err
    assert done.err.strip().splitlines()[-1] == said and "Traceback" not in done.err
    assert not out.exists()
    assert _leftovers(tmp_path) == []


def test_a_signalled_overwrite_keeps_the_old_folder(bigger: Path, tmp_path: Path) -> None:
    out = build_shards([str(SAMPLE)], tmp_path / "shards", BuildOptions()).out
    before = _tree(out)
    done = interrupt_when(
        ["traces", "build", str(bigger), "--out", str(out), "--overwrite"],
        lambda: bool(_leftovers(tmp_path)),
        signal.SIGTERM,
    )
    assert done.code == 143
    assert _tree(out) == before
    assert _leftovers(tmp_path) == []


def test_a_killed_build_is_cleaned_by_the_next_one(bigger: Path, tmp_path: Path) -> None:
    out = tmp_path / "shards"
    done = interrupt_when(
        ["traces", "build", str(bigger), "--out", str(out)],
        lambda: bool(_leftovers(tmp_path)),
        signal.SIGKILL,
    )
    assert done.code == -signal.SIGKILL
    assert len(_leftovers(tmp_path)) == 1  # SIGKILL cannot be cleaned up after …
    build_shards([str(SAMPLE)], out, BuildOptions())
    assert _leftovers(tmp_path) == []  # … but the next build next to it removes it
    assert os.path.isdir(out)
