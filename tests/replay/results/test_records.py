"""Records on disk: packed chunk times (first exact, the rest to the µs), both line forms and both
files (plain while the run goes on, zstd once it has ended), and clear errors for broken files."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from records import record

from replay.errors import ReplayError
from replay.results.layout import RECORDS_FILE, RECORDS_ZST_FILE
from replay.results.records import (
    CHUNK_RESOLUTION_NS,
    Record,
    RecordWriter,
    compress_records,
    pack_chunks,
    read_records,
    record_line,
    records_path,
    unpack_chunks,
)

SEND = 5_000_000_000_123


def _json(r: Record) -> str:
    return record_line(r).decode("utf-8")


def _record(k: int, chunk_ns: tuple[int, ...]) -> Record:
    return record(
        instance_id=f"t{k}__r1",
        trajectory_id=f"t{k}",
        prompt_sha256="x",
        salt_conversation="abcd",
        t_send_ns=SEND,
        t_first_ns=chunk_ns[0] if chunk_ns else None,
        t_last_ns=chunk_ns[-1] if chunk_ns else None,
        chunk_ns=chunk_ns,
        content="héllo " * 3,
        tool_calls=({"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}},),
        prompt_tokens=10,
        completion_tokens=3,
    )


def _floored(chunk_ns: tuple[int, ...]) -> tuple[int, ...]:
    """What the reader returns: the first time exact, each later one floored to the µs after it."""
    first = chunk_ns[0]
    return tuple(first + (t - first) // CHUNK_RESOLUTION_NS * CHUNK_RESOLUTION_NS for t in chunk_ns)


@given(st.lists(st.integers(min_value=-(10**12), max_value=10**12), max_size=50))
def test_packed_times_are_the_measured_ones_to_the_microsecond(offsets: list[int]) -> None:
    chunk_ns = tuple(SEND + abs(o) for o in sorted(offsets, key=abs))
    got = unpack_chunks(SEND, pack_chunks(SEND, chunk_ns))
    assert len(got) == len(chunk_ns)
    if chunk_ns:
        assert got == _floored(chunk_ns) and got[0] == chunk_ns[0]
        assert all(0 <= t - g < CHUNK_RESOLUTION_NS for t, g in zip(chunk_ns, got, strict=True))
        assert unpack_chunks(SEND, pack_chunks(SEND, got)) == got  # stored once, stored the same


def test_out_of_order_clocks_still_round_trip() -> None:
    chunk_ns = (SEND - 7, SEND + 5_000, SEND + 3_000, SEND + 3_000)
    assert unpack_chunks(SEND, pack_chunks(SEND, chunk_ns)) == (
        SEND - 7,
        SEND - 7 + 5_000,
        SEND - 7 + 3_000,
        SEND - 7 + 3_000,
    )


@pytest.mark.parametrize(
    ("gaps_us", "width"),
    [
        ((0, 255), b"B"),
        ((256,), b"H"),
        ((70_000,), b"I"),
        ((-1, 127), b"b"),
        ((-200,), b"h"),
        ((-70_000,), b"i"),
        ((-(2**40),), b"q"),
        ((), b"B"),
    ],
)
def test_gaps_take_the_narrowest_width(gaps_us: tuple[int, ...], width: bytes) -> None:
    chunk_ns = [SEND + 123]
    for g in gaps_us:
        chunk_ns.append(chunk_ns[-1] + g * CHUNK_RESOLUTION_NS)
    packed = pack_chunks(SEND, chunk_ns)
    assert base64.b64decode(packed)[:1] == width
    assert unpack_chunks(SEND, packed) == tuple(chunk_ns)


def test_a_paced_400_chunk_turn_packs_in_two_bytes_a_chunk() -> None:
    chunk_ns = tuple(SEND + 50_000_000 + k * 5_000_317 for k in range(400))
    packed = pack_chunks(SEND, chunk_ns)
    assert len(packed) == -(-(1 + 8 + 399 * 2) // 3) * 4  # base64 of width, first offset, 2 bytes a gap
    assert unpack_chunks(SEND, packed) == _floored(chunk_ns)


def test_lines_carry_packed_times_and_the_old_form_still_reads(tmp_path: Path) -> None:
    rec = _record(0, (SEND + 40_000_001, SEND + 45_000_999, SEND + 45_000_999))
    line = json.loads(_json(rec))
    assert "chunk_ns" not in line and isinstance(line["chunks"], str)
    old = {k: v for k, v in line.items() if k != "chunks"} | {"chunk_ns": list(rec.chunk_ns)}
    (tmp_path / RECORDS_FILE).write_text(json.dumps(old) + "\n" + _json(rec) + "\n")
    old_form, new_form = read_records(tmp_path)
    assert old_form == rec
    assert new_form == replace(rec, chunk_ns=_floored(rec.chunk_ns))


def _write(folder: Path, n: int) -> list[Record]:
    recs = [_record(k, tuple(SEND + 1_000 * j for j in range(1, k + 2))) for k in range(n)]
    with RecordWriter(folder) as w:
        for r in recs:
            w.write(r)
    return recs


def test_compressed_records_read_the_same_and_replace_the_plain_file(tmp_path: Path) -> None:
    recs = _write(tmp_path, 30)
    before = list(read_records(tmp_path))
    assert before == recs
    assert compress_records(tmp_path) == tmp_path / RECORDS_ZST_FILE
    assert sorted(p.name for p in tmp_path.iterdir()) == [RECORDS_ZST_FILE]
    assert records_path(tmp_path) == tmp_path / RECORDS_ZST_FILE
    assert list(read_records(tmp_path)) == before
    assert compress_records(tmp_path) is None  # already done


def test_a_crash_between_rename_and_unlink_reads_the_compressed_file(tmp_path: Path) -> None:
    _write(tmp_path, 3)
    plain = (tmp_path / RECORDS_FILE).read_bytes()
    compress_records(tmp_path)
    (tmp_path / RECORDS_FILE).write_bytes(plain + b'{"torn')
    assert len(list(read_records(tmp_path))) == 3


def test_a_truncated_or_corrupt_compressed_file_is_a_clear_error(tmp_path: Path) -> None:
    _write(tmp_path, 200)
    path = compress_records(tmp_path)
    assert path is not None
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReplayError, match=r"records\.jsonl\.zst: the zstd stream is truncated"):
        list(read_records(tmp_path))
    path.write_bytes(b"not zstd at all")
    with pytest.raises(ReplayError, match=r"records\.jsonl\.zst: not a zstd file, or a corrupt one"):
        list(read_records(tmp_path))


def test_a_torn_last_line_is_skipped_and_a_broken_one_named(tmp_path: Path) -> None:
    recs = _write(tmp_path, 2)
    path = tmp_path / RECORDS_FILE
    with path.open("a") as fh:
        fh.write(_json(recs[0])[:40])
    assert len(list(read_records(tmp_path))) == 2
    line = json.loads(_json(recs[1]))
    path.write_text(_json(recs[0]) + "\n" + json.dumps({**line, "chunks": "!!"}) + "\n")
    with pytest.raises(ReplayError, match=r"records\.jsonl:2: unreadable record"):
        list(read_records(tmp_path))
    torn = base64.b64encode(b"H" + bytes(8) + b"\x01").decode()  # a 2-byte gap cut after 1 byte
    path.write_text(json.dumps({**line, "chunks": torn}) + "\n")
    with pytest.raises(ReplayError, match=r"records\.jsonl:1: unreadable record \(packed chunk times end inside"):
        list(read_records(tmp_path))
    path.write_text(json.dumps({**line, "chunks": "gA=="}) + "\n")  # no width byte
    with pytest.raises(ReplayError, match=r"records\.jsonl:1: unreadable record \(packed chunk times have no valid"):
        list(read_records(tmp_path))
    # the same rules inside a compressed file
    path.write_bytes(zstandard.ZstdCompressor().compress((_json(recs[0]) + "\n{").encode()))
    path.rename(tmp_path / RECORDS_ZST_FILE)
    assert len(list(read_records(tmp_path))) == 1


def test_no_records_file_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match=r"no records\.jsonl; pass a folder written by `trajbench replay run`"):
        list(read_records(tmp_path))


def test_a_lone_surrogate_in_a_message_is_kept(tmp_path: Path) -> None:
    rec = replace(_record(0, (SEND + 1_000,)), error_kind="stream", error_message="bad \ud800 byte")
    with RecordWriter(tmp_path) as w:
        w.write(rec)
    assert list(read_records(tmp_path)) == [rec]
