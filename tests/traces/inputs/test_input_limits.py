"""Inputs that would exhaust memory or crash the reader: endless lines, zstd bombs, files that are
not zstd or stop mid-frame, floods of bad lines. Each is a located one-line error, never a
traceback, and the command's peak memory (measured in a child process) stays small."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard
from clirun import trajbench

from traces import BuildOptions, TraceError, build_shards, validate_sources
from traces.inputs.io import MAX_LINE_BYTES, iter_lines

SAMPLE = Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl"
#: Peak RSS a validating `trajbench` may reach on any of these inputs (it starts near 100 MB).
RSS_LIMIT_MB = 300


def _frames(path: Path, block: bytes, count: int) -> Path:
    """`count` zstd frames of `block` each: a valid multi-frame file, written in a blink."""
    frame = zstandard.ZstdCompressor(level=19).compress(block)
    path.write_bytes(frame * count)
    return path


def _assert_clean_failure(done, *lines: str) -> None:
    assert done.code == 1, done.err
    assert "Traceback" not in done.err, done.err
    for line in lines:
        assert line in done.err, done.err


def test_dev_zero_is_named_a_binary_file_from_its_first_bytes() -> None:
    done = trajbench("traces", "validate", "/dev/zero", measure=True, timeout=60)
    _assert_clean_failure(done, "/dev/zero: a binary file (it holds NUL bytes), not trace data")
    assert done.error_lines == ["Error: 1 error(s); 0 valid trajectories (0 client turns)"]
    assert done.peak_rss_mb is not None and done.peak_rss_mb < RSS_LIMIT_MB, done.peak_rss_mb


def test_endless_line_stops_after_a_bounded_read(tmp_path: Path) -> None:
    endless = _frames(tmp_path / "endless.jsonl.zst", b"x" * (1 << 20), 1100)  # 1.07 GiB, no newline
    done = trajbench("traces", "validate", str(endless), measure=True, timeout=60)
    _assert_clean_failure(
        done, f"{endless}:1: no newline in the first 1,073,741,824 bytes of this line; stopped reading the file"
    )
    assert done.error_lines == ["Error: 1 error(s); 0 valid trajectories (0 client turns)"]
    assert done.peak_rss_mb is not None and done.peak_rss_mb < RSS_LIMIT_MB, done.peak_rss_mb


def test_zstd_bomb_of_one_line_is_measured_not_loaded(tmp_path: Path) -> None:
    bomb = _frames(tmp_path / "bomb.jsonl.zst", b"x" * (1 << 20), 1024)  # 1 GiB without a newline
    assert bomb.stat().st_size < 200_000
    done = trajbench("traces", "validate", str(bomb), measure=True, timeout=60)
    _assert_clean_failure(done, f"{bomb}:1: line is 1,073,741,824 bytes, over the 16,777,216-byte limit of one row")
    assert done.peak_rss_mb is not None and done.peak_rss_mb < RSS_LIMIT_MB, done.peak_rss_mb


def test_zstd_bomb_of_bad_lines_stops_after_a_thousand_errors(tmp_path: Path) -> None:
    bomb = _frames(tmp_path / "lines.jsonl.zst", b"[]\n" * (1 << 20), 64)  # 67 million lines
    done = trajbench("traces", "validate", str(bomb), measure=True, timeout=60)
    _assert_clean_failure(
        done,
        f"{bomb}:1: each line must be a JSON object, got list",
        f"{bomb}: stopped reading after 1,000 errors; fix these first, then validate again",
    )
    assert done.err.count("\n") < 1010
    assert done.peak_rss_mb is not None and done.peak_rss_mb < RSS_LIMIT_MB, done.peak_rss_mb


def test_zstd_bomb_as_one_json_document_is_refused_at_the_document_limit(tmp_path: Path) -> None:
    bomb = _frames(tmp_path / "doc.json.zst", b" " * (1 << 20), 1024)
    done = trajbench("traces", "validate", "--format", "openai-messages", str(bomb), measure=True, timeout=60)
    _assert_clean_failure(done, f"{bomb}: the document is over 268,435,456 bytes; write such data as JSON Lines")
    # the document limit itself is held in memory once (with the interpreter's ~100 MB)
    assert done.peak_rss_mb is not None and done.peak_rss_mb < 300 + RSS_LIMIT_MB, done.peak_rss_mb


def test_a_zst_file_that_is_not_zstd_is_one_error_line(tmp_path: Path) -> None:
    src = tmp_path / "plain.jsonl.zst"
    src.write_bytes(SAMPLE.read_bytes())
    done = trajbench("traces", "validate", str(src))
    _assert_clean_failure(
        done, f"{src}: not a zstd file, or a corrupt one (ZSTD decompress failed: Unknown frame descriptor)"
    )
    assert done.err.splitlines() == [
        f"{src}: not a zstd file, or a corrupt one (ZSTD decompress failed: Unknown frame descriptor); a .zst file must be zstd-compressed (check it with `zstd -t`)",
        "Error: 1 error(s); 0 valid trajectories (0 client turns)",
    ]
    build = trajbench("traces", "build", str(src), "--out", str(tmp_path / "shards"))
    _assert_clean_failure(build, "not a zstd file")
    assert not (tmp_path / "shards").exists()


@pytest.mark.parametrize("cut", [3, 300, -5])
def test_a_truncated_zst_file_is_an_error_not_a_shorter_dataset(tmp_path: Path, cut: int) -> None:
    whole = zstandard.ZstdCompressor().compress(SAMPLE.read_bytes() * 3)
    src = tmp_path / "cut.jsonl.zst"
    src.write_bytes(whole[:cut])
    _, _, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert [str(e) for e in errors][
        -1
    ] == f"{src}: the zstd stream is truncated (the file ends inside a frame); copy or compress it again"
    with pytest.raises(TraceError, match="truncated"):
        build_shards([str(src)], tmp_path / "out", BuildOptions())
    assert not (tmp_path / "out").exists()


def test_multi_frame_zst_reads_whole(tmp_path: Path) -> None:
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    src = tmp_path / "two.jsonl.zst"
    half = len(lines) // 2
    src.write_bytes(
        zstandard.ZstdCompressor().compress(b"".join(lines[:half]))
        + zstandard.ZstdCompressor().compress(b"".join(lines[half:]))
    )
    n_traj, n_turns, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert (n_traj, n_turns, errors) == (4, 17, [])


def test_line_limit_boundary_is_exact(tmp_path: Path) -> None:
    src = tmp_path / "edge.jsonl"
    with src.open("wb") as fh:
        fh.write(b"x" * MAX_LINE_BYTES + b"\n")  # exactly at the limit: read (and found not to be JSON)
        fh.write(b"y" * (MAX_LINE_BYTES + 1) + b"\n")  # one byte over: reported by length
        fh.write(b"z" * (MAX_LINE_BYTES + 1))  # over, and no final newline
    errors: list[str] = []
    lines = list(iter_lines(src, lambda e: errors.append(str(e))))
    assert [(n, len(raw)) for n, raw in lines] == [(1, MAX_LINE_BYTES)]
    assert errors == [
        f"{src}:2: line is 16,777,217 bytes, over the 16,777,216-byte limit of one row; split the message or check for a missing newline",
        f"{src}:3: line is 16,777,217 bytes, over the 16,777,216-byte limit of one row; split the message or check for a missing newline",
    ]


def test_lines_after_an_overlong_one_are_still_read(tmp_path: Path) -> None:
    src = tmp_path / "mixed.jsonl"
    rows = SAMPLE.read_bytes().splitlines(keepends=True)
    src.write_bytes(rows[0] + b'{"x":"' + b"a" * (20 << 20) + b'"}\n' + b"".join(rows[1:]))
    _, _, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert str(errors[0]).startswith(f"{src}:2: line is 20,971,528 bytes")
    assert len(errors) == 1
