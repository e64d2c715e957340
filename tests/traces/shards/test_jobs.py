"""`--jobs N` writes the same bytes as `--jobs 1`: `traces build` (shards, manifest, content hash,
history-marker tally, whose choices are made in the workers and adopted in order) and `traces stats`."""

from __future__ import annotations

from pathlib import Path

import pytest

import traces
from traces.parallel import ordered_map


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _square(x: int) -> int:
    if x == 7:
        raise ValueError("seven")
    return x * x


def test_ordered_map_keeps_the_order_and_raises_at_the_item() -> None:
    assert list(ordered_map(_square, range(6), 2, window=3)) == [0, 1, 4, 9, 16, 25]
    got = []
    with pytest.raises(ValueError, match="seven"):
        for v in ordered_map(_square, range(10), 2):
            got.append(v)
    assert got == [0, 1, 4, 9, 16, 25, 36]


@pytest.mark.parametrize("tokenizer", [None, "qwen3.6"])
def test_jobs_build_the_same_bytes(coding_set: Path, sample: Path, tmp_path: Path, tokenizer: str | None) -> None:
    counter = None
    if tokenizer is not None:
        from traces.tokenizers import load_tokenizer

        try:
            counter = load_tokenizer(tokenizer)
        except traces.TraceError as exc:
            pytest.skip(str(exc))
    opts = traces.BuildOptions(name="same", repeats=2, rows_per_shard=10)
    sources = [str(sample)] if tokenizer else [str(coding_set), str(sample)]
    one = traces.build_shards(sources, tmp_path / "j1", opts, counter=counter)
    traces.build_shards(sources, tmp_path / "j2", opts, counter=counter, jobs=2)
    assert len(one.manifest.shards) > 1 and one.manifest.history_marker is not None
    assert _files(tmp_path / "j1") == _files(tmp_path / "j2")


def test_jobs_must_be_positive(sample: Path, tmp_path: Path) -> None:
    with pytest.raises(traces.TraceError, match="--jobs must be >= 1, got 0"):
        traces.build_shards([str(sample)], tmp_path / "x", traces.BuildOptions(), jobs=0)


def test_stats_jobs_give_the_same_statistics(coding_set: Path, sample: Path, tmp_path: Path) -> None:
    from traces.analysis import StatsOptions, compute_stats

    shards = tmp_path / "shards"
    traces.build_shards([str(coding_set), str(sample)], shards, traces.BuildOptions(repeats=2))
    opts = StatsOptions(block_size=16)
    (tmp_path / "s1").mkdir()
    (tmp_path / "s2").mkdir()
    one = compute_stats(shards, options=opts).write(tmp_path / "s1")
    two = compute_stats(shards, options=opts, jobs=2).write(tmp_path / "s2")
    assert one.read_bytes() == two.read_bytes()


def test_a_fault_in_the_sources_is_the_same_error_with_jobs(tmp_path: Path, sample: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(sample.read_text() + '{"conversation_id": "x", "turn": 1}\n')
    errors = []
    for jobs in (1, 2):
        with pytest.raises(traces.TraceError) as info:
            traces.build_shards([str(bad)], tmp_path / f"out{jobs}", traces.BuildOptions(), jobs=jobs)
        errors.append((type(info.value), str(info.value)))
        assert not (tmp_path / f"out{jobs}").exists()
    assert errors[0] == errors[1]
