"""The lock of a run or sweep folder (docs/files.md): one holder at a time, named by its PID to
whoever is refused; a lock file a dead process left is no lock; a sweep holds its folder too."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay import FolderInUse, RunConfig, run_sweep
from replay.results import LOCK_FILE, folder_lock, lock_holder


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    with folder_lock(tmp_path):
        assert lock_holder(tmp_path) == os.getpid()
        with pytest.raises(FolderInUse, match=f"in use by process {os.getpid()}, which is writing this run folder"):
            with folder_lock(tmp_path):
                pass
    assert lock_holder(tmp_path) is None
    assert not (tmp_path / LOCK_FILE).exists()  # let go: the file goes with it
    with folder_lock(tmp_path):  # and the folder can be taken again
        pass


def test_a_lock_file_left_by_a_dead_process_is_no_lock(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_FILE).write_text(dead.stdout)  # as a SIGKILLed run leaves it
    assert lock_holder(tmp_path) is None
    with folder_lock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_a_lock_held_by_another_process_is_seen(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from replay.results import folder_lock\n"
        "with folder_lock(sys.argv[1]):\n"
        "    print('held', flush=True)\n"
        "    sys.stdin.readline()\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout is not None and p.stdout.readline() == "held\n"
        assert lock_holder(tmp_path) == p.pid
        with pytest.raises(FolderInUse) as exc:
            with folder_lock(tmp_path, "sweep"):
                pass
        assert exc.value.pid == p.pid and "writing this sweep folder" in str(exc.value)
    finally:
        p.communicate("\n", timeout=30)
    assert lock_holder(tmp_path) is None


def test_a_sweep_on_a_folder_in_use_is_refused_before_it_runs(tmp_path: Path, sample_shards: Path) -> None:
    out = tmp_path / "sweep"
    out.mkdir()
    with folder_lock(out, "sweep"):
        with pytest.raises(FolderInUse, match=f"in use by process {os.getpid()}, which is writing this sweep folder"):
            asyncio.run(run_sweep(RunConfig(shards=str(sample_shards), endpoint="http://127.0.0.1:9"), [1], out))
    assert sorted(p.name for p in out.iterdir()) == []  # nothing written
