"""Tampering with a built shard folder the ways an attacker (or a bad copy) would, for the
tests that prove none of it goes unnoticed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from traces.canonical import sha256_file


def manifest(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "manifest.json").read_text())
    return data


def edit_manifest(folder: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    m = manifest(folder)
    edit(m)
    (folder / "manifest.json").write_text(json.dumps(m))


def part(folder: Path, k: int = 0) -> Path:
    """The k-th shard file the manifest lists."""
    return folder / str(manifest(folder)["shards"][k]["file"])


def flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


def truncate(path: Path, size: int) -> None:
    os.truncate(path, size)


def inject(folder: Path, text: str) -> None:
    """Rewrite the first shard file with the same schema and row groups, `text` appended to
    every system prompt."""
    path = part(folder)
    src = pq.ParquetFile(path)
    schema = src.schema_arrow
    groups = [src.read_row_group(g).to_pylist() for g in range(src.num_row_groups)]
    src.close()
    with pq.ParquetWriter(path, schema, compression="zstd") as w:
        for rows in groups:
            for row in rows:
                if row["system"]:
                    row["system"] += text
            w.write_table(pa.Table.from_pylist(rows, schema=schema), row_group_size=len(rows) + 1)


def reseal(folder: Path, *, content_hash: str | None = None) -> None:
    """Make the manifest's sizes and sha256s match the files again; `content_hash` replaces the
    manifest's content hash too (a thorough attacker)."""

    def fix(m: dict[str, Any]) -> None:
        for entry in m["shards"]:
            entry["bytes"] = (folder / entry["file"]).stat().st_size
            entry["sha256"] = sha256_file(folder / entry["file"])
        if content_hash is not None:
            m["content_hash"] = content_hash

    edit_manifest(folder, fix)


def edit_json(folder: Path, name: str, edit: Callable[[dict[str, Any]], object]) -> None:
    """Hand-edit one JSON file of a folder (a run's run.json, result_summary.json, …), as a
    person with a text editor would."""
    path = folder / name
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


def edit_records(run_dir: Path, edit: Callable[[list[bytes]], list[bytes]]) -> None:
    """Rewrite a run's record lines (`records.jsonl.zst`, or the plain file of a run that never
    ended) through `edit`, compressed as replay compresses them."""
    import zstandard

    zst = run_dir / "records.jsonl.zst"
    if zst.is_file():
        lines = zstandard.ZstdDecompressor().decompressobj().decompress(zst.read_bytes()).splitlines(keepends=True)
        zst.write_bytes(zstandard.ZstdCompressor(level=3).compress(b"".join(edit(lines))))
    else:
        plain = run_dir / "records.jsonl"
        plain.write_bytes(b"".join(edit(plain.read_bytes().splitlines(keepends=True))))
