"""`traces build`: determinism, atomicity, repeats, Hugging Face loading, the CLI surface."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import cli, main
from traces import BuildOptions, Shards, TraceError, build_shards, iter_prompts, messages_sha256


def test_same_input_same_hash_and_bytes_in_different_folders(coding_set: Path, tmp_path: Path) -> None:
    a = build_shards([str(coding_set)], tmp_path / "one" / "s", BuildOptions(name="c"))
    src_copy = tmp_path / "elsewhere" / coding_set.name
    src_copy.parent.mkdir()
    shutil.copy(coding_set, src_copy)
    b = build_shards([str(src_copy)], tmp_path / "two" / "s", BuildOptions(name="c"))
    assert a.manifest.content_hash == b.manifest.content_hash
    assert a.manifest.shards == b.manifest.shards  # same file names, rows, sha256
    files = sorted(p.relative_to(a.out) for p in a.out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b.out) for p in b.out.rglob("*") if p.is_file())
    assert all((a.out / f).read_bytes() == (b.out / f).read_bytes() for f in files)  # manifest.json too
    c = build_shards([str(coding_set)], tmp_path / "three", BuildOptions(name="c", salt="none"))
    assert c.manifest.content_hash != a.manifest.content_hash


def test_prompt_hash_column_matches_rebuilt_prompts(sample: Path, tmp_path: Path) -> None:
    build_shards([str(sample)], tmp_path / "s", BuildOptions(repeats=2))
    shards = Shards(tmp_path / "s")
    assert len(shards) == 8
    ids = [entry[0] for entry in shards.index]
    assert ids[:4] == ["acme__widgets-101", "acme__parser-7", "sim_001", "sim_002"]
    assert ids[4] == "acme__widgets-101__repeat_2"
    for inst in shards:
        for p in iter_prompts(inst):
            assert p.sha256 == p.row.prompt_sha256 == messages_sha256(p.messages)
            assert p.row.prompt_chars == len(
                json.dumps(p.messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            )
    r1, r2 = shards.find("sim_001", 1), shards.find("sim_001", 2)
    assert r1.turns[0].salt_repeat == "4461" and r2.turns[0].salt_repeat == "ba75"
    assert r1.turns[0].salt_conversation == r2.turns[0].salt_conversation


def test_workflow_ground_truth_and_domain(sample: Path, tmp_path: Path) -> None:
    build_shards([str(sample)], tmp_path / "s", BuildOptions())
    inst = Shards(tmp_path / "s").find("sim_001")
    assert [t.turn for t in inst.turns] == [1, 3, 5, 7]
    assert [t.intent_codes for t in inst.turns] == [["I010"], ["I010"], ["I010"], ["I020"]]
    assert {t.domain for t in inst.turns} == {"workflow"}
    assert [t.delay_seconds for t in inst.turns] == [0.0, 0.3, 0.2, 4.0]


def test_existing_output_is_refused_then_replaced_atomically(sample: Path, tmp_path: Path) -> None:
    out = tmp_path / "s"
    build_shards([str(sample)], out, BuildOptions())
    with pytest.raises(TraceError, match="already exists"):
        build_shards([str(sample)], out, BuildOptions())
    build_shards([str(sample)], out, BuildOptions(salt="none"), overwrite=True)
    assert Shards(out).options.salt == "none"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_loads_with_hugging_face_datasets(sample: Path, tmp_path: Path) -> None:
    import datasets

    build_shards([str(sample)], tmp_path / "s", BuildOptions())
    files = sorted(str(p) for p in (tmp_path / "s").glob("*.parquet"))
    ds = datasets.load_dataset("parquet", data_files=files, split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 17
    assert ds[0]["trajectory_id"] == "acme__widgets-101"


def test_cli_build_show_export(sample: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "s"
    res = runner.invoke(cli, ["traces", "build", str(sample), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "4 trajectories" in res.output and "17 client turns" in res.output
    res = runner.invoke(cli, ["traces", "show", str(out), "--trajectory", "sim_002", "--turn", "3"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)  # stderr notes the profile shown (the shards do not name one)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][2]["content"].startswith("intent:  I030")
    res = runner.invoke(cli, ["traces", "export", str(out), "--out", str(tmp_path / "e.jsonl")])
    assert res.exit_code == 0 and "wrote 34 rows" in res.output


def test_cli_error_boundary_prints_error_not_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["traces", "show", str(tmp_path), "--trajectory", "x", "--turn", "1"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and "manifest.json" in err and "Traceback" not in err
