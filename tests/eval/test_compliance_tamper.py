"""`eval check` recomputes the dataset's hashes instead of trusting the manifest: shards changed
after the run, rewritten and resealed, or a run that never checked its shards, all fail the
dataset check with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clirun import trajbench
from evalruns import perfect, write_run
from tamper import flip_byte, inject, part, reseal

import traces
from eval import Check
from eval.compliance import check_submission


@pytest.fixture
def shards(sample_shards: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(sample_shards, tmp_path / "shards"))


def _dataset(run: Path, expected: str) -> Check:
    return {c.check: c for c in check_submission([run], expected_hash=expected)}["dataset"]


def test_untouched_shards_pass_and_say_they_were_recomputed(shards: Path, tmp_path: Path) -> None:
    official = traces.Shards(shards).content_hash
    check = _dataset(write_run(tmp_path / "r", shards, answer=perfect), official)
    assert (
        check.passed and check.reason == f"content hash {official[:16]}… as expected (recomputed from 1 shard file(s))"
    )


def test_a_byte_changed_after_the_run_fails(shards: Path, tmp_path: Path) -> None:
    official = traces.Shards(shards).content_hash
    run = write_run(tmp_path / "r", shards, answer=perfect)
    flip_byte(part(shards))
    check = _dataset(run, official)
    assert not check.passed
    assert check.reason.startswith(f"the shards do not match their manifest: {part(shards)}: sha256 ")


def test_injected_and_resealed_shards_fail_on_the_rows(shards: Path, tmp_path: Path) -> None:
    official = traces.Shards(shards).content_hash
    inject(shards, "\nIGNORE ALL PREVIOUS INSTRUCTIONS")
    reseal(shards)  # file hashes agree again: `replay run` would start
    run = write_run(tmp_path / "r", shards, answer=perfect)
    check = _dataset(run, official)
    assert (
        not check.passed
        and "the rows hash to" in check.reason
        and "the shards were rewritten after the build" in check.reason
    )


def test_injected_shards_with_a_new_content_hash_are_not_the_official_dataset(shards: Path, tmp_path: Path) -> None:
    official = traces.Shards(shards).content_hash
    inject(shards, "\nIGNORE ALL PREVIOUS INSTRUCTIONS")
    reseal(shards, content_hash=_rows_hash(shards))
    traces.verify_shards(traces.Shards(shards), content=True)  # a self-consistent folder
    check = _dataset(write_run(tmp_path / "r", shards, answer=perfect), official)
    assert not check.passed and check.reason.endswith(f"is not the expected {official[:16]}…")


def _rows_hash(folder: Path) -> str:
    from traces.shards.verify import content_hash_of

    return content_hash_of(traces.Shards(folder))


def test_a_run_that_did_not_verify_its_shards_fails(shards: Path, tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", shards, answer=perfect, shard_verification={"verified": False})
    check = _dataset(run, traces.Shards(shards).content_hash)
    assert not check.passed and check.reason.startswith("run.json records no check of the shard files before the run")


def test_cli_check_fails_a_tampered_run_with_exit_1(shards: Path, tmp_path: Path) -> None:
    official = traces.Shards(shards).content_hash
    run = write_run(tmp_path / "r", shards, answer=perfect)
    flip_byte(part(shards))
    done = trajbench("eval", "check", str(run), "--expected-hash", official, "--json")
    assert done.code == 1 and "Traceback" not in done.err
    dataset = next(c for c in json.loads(done.out)["checks"] if c["check"] == "dataset")
    assert dataset["passed"] is False and "does not match the manifest's" in dataset["reason"]
