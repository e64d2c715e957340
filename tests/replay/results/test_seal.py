"""seal.json (docs/files.md): every file of a finished run folder by sha256, size and writer;
`verify_seal` names each file missing, extra or changed; a later command amends only its own
files, so a broken seal stays broken; a folder never sealed is not sealed after the fact."""

from __future__ import annotations

from pathlib import Path

import traces
from replay.results import SEAL_FILE, amend_seal, read_seal, verify_seal, write_seal
from replay.results.layout import LOCK_FILE

V = traces.__version__


def _folder(root: Path) -> Path:
    run = root / "run"
    (run / "performance").mkdir(parents=True)
    (run / "run.json").write_text('{"a": 1}\n')
    (run / "records.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd" + bytes(range(200)))
    (run / "performance" / "result_summary.json").write_text("{}\n")
    (run / LOCK_FILE).write_text("123\n")  # the run's own lock: never sealed
    return run


def test_a_sealed_folder_verifies_and_lists_every_file_but_the_lock(tmp_path: Path) -> None:
    run = _folder(tmp_path)
    seal = write_seal(run, "replay run")
    assert sorted(seal.files) == ["performance/result_summary.json", "records.jsonl.zst", "run.json"]
    entry = seal.files["run.json"]
    assert (entry.sha256, entry.size, entry.writer) == (traces.sha256_file(run / "run.json"), 9, f"replay run {V}")
    check = verify_seal(run)
    assert check.intact and check.reason() == f"3 file(s) as sealed by trajbench {V} (replay run {V})"


def test_seal_bytes_are_deterministic(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a")
    b = _folder(tmp_path / "b")
    write_seal(a, "replay run")
    write_seal(b, "replay run")
    assert (a / SEAL_FILE).read_bytes() == (b / SEAL_FILE).read_bytes()


def test_missing_extra_and_changed_files_are_named(tmp_path: Path) -> None:
    run = _folder(tmp_path)
    write_seal(run, "replay run")
    (run / "run.json").write_text('{"a": 2}\n')  # same size, other bytes
    (run / "performance" / "result_summary.json").write_text('{"tps": 1}\n')  # other size
    (run / "records.jsonl.zst").unlink()
    (run / "notes.txt").write_text("added later")
    check = verify_seal(run)
    assert not check.intact
    assert check.missing == ("records.jsonl.zst",) and check.extra == ("notes.txt",)
    assert [c.name for c in check.changed] == ["performance/result_summary.json", "run.json"]
    sealed = traces.sha256_text('{"a": 1}\n')[:12]
    now = traces.sha256_file(run / "run.json")[:12]
    assert check.reason() == (
        f"{run}/seal.json: changed since sealed: performance/result_summary.json changed (11 bytes, sealed with 3), "
        f"run.json changed (sha256 {now}…, sealed {sealed}…); missing: records.jsonl.zst; not sealed (extra): notes.txt"
    )


def test_a_later_command_amends_only_its_own_files_and_a_broken_seal_stays_broken(tmp_path: Path) -> None:
    run = _folder(tmp_path)
    write_seal(run, "replay run")
    (run / "scores.json").write_text("{}\n")
    amend_seal(run, ["scores.json"], "eval inline")
    assert verify_seal(run).intact
    assert read_seal(run).files["scores.json"].writer == f"eval inline {V}"  # type: ignore[union-attr]
    (run / "run.json").write_text('{"a": 9}\n')  # edited by hand
    (run / "scores.json").write_text('{"score": 1}\n')
    amend_seal(run, ["scores.json"], "eval inline")  # rescoring renews scores.json, and only it
    check = verify_seal(run)
    assert [c.name for c in check.changed] == ["run.json"]


def test_an_unsealed_folder_is_not_sealed_by_a_later_command(tmp_path: Path) -> None:
    run = _folder(tmp_path)  # a run killed before its end: no seal
    (run / "scores.json").write_text("{}\n")
    assert amend_seal(run, ["scores.json"], "eval inline") is None
    assert not (run / SEAL_FILE).exists()
    check = verify_seal(run)
    assert not check.intact and check.reason().startswith(
        f"{run}/seal.json: missing; the run never finished writing the folder (killed, or still running)"
    )


def test_an_unreadable_seal_trusts_nothing(tmp_path: Path) -> None:
    run = _folder(tmp_path)
    (run / SEAL_FILE).write_text('{"files": 3}')
    check = verify_seal(run)
    assert not check.intact and "the seal is unreadable, so no file can be trusted" in check.reason()
