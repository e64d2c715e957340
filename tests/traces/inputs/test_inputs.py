"""Inputs people have: Parquet and Arrow tables, Hugging Face dataset folders (save_to_disk and
the Hub's data/*.parquet layout), `hf:org/name` from the local Hub cache (never a download), and
binary files named for what they are. The same trajectories build to the same content hash
whatever file they came in, and errors give the file and the row.

The Hugging Face fixtures are made here, with `datasets` and pyarrow, from the bundled sample."""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

import cli
import traces
import traces.inputs.tabular
from traces import BuildOptions, ShardError, TraceError, build_shards, validate_sources
from traces.inputs.resolve import expand_inputs

SAMPLE = Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _rows() -> list[dict[str, Any]]:
    """The sample's rows with every column on every row (None where a row has no such field),
    as a table holds them."""
    rows = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines() if line.strip()]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return [{k: r.get(k) for k in columns} for r in rows]


def _hash(src: str | Path, tmp: Path, fmt: str = "mlperf-jsonl", name: str = "s") -> str:
    out = tmp / f"shards-{name}"
    return build_shards([str(src)], out, BuildOptions(format=fmt, name="d")).manifest.content_hash


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _hash(SAMPLE, tmp_path_factory.mktemp("ref"))


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test: nothing may be downloaded."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# ---------------------------------------------------------------- tables
def test_parquet_of_flat_rows_builds_the_same_content_hash(
    reference: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(traces.inputs.tabular, "BATCH_ROWS", 5)  # rows cross batch and row-group boundaries
    src = tmp_path / "flat.parquet"
    pq.write_table(pa.Table.from_pylist(_rows()), src, row_group_size=7)
    assert pq.ParquetFile(src).num_row_groups == 5
    assert _hash(src, tmp_path) == reference


def test_parquet_errors_name_the_file_and_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traces.inputs.tabular, "BATCH_ROWS", 4)
    rows = _rows()
    rows[10]["role"] = "robot"
    src = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src, row_group_size=3)
    _, _, errors = validate_sources([str(src)], "mlperf-jsonl")
    assert [str(e) for e in errors] == [
        f"{src}:11: conversation acme__parser-7 turn 1: role must be one of user, assistant, tool; got 'robot'"
    ]


def test_json_text_columns_are_decoded_and_nulls_are_missing_fields(tmp_path: Path, reference: str) -> None:
    rows = _rows()
    for r in rows:  # the usual way to keep a table's schema fixed: nested values as JSON text
        for key in ("tools", "tool_calls", "tool_results"):
            r[key] = None if r[key] is None else json.dumps(r[key])
    src = tmp_path / "text-columns.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    assert pa.types.is_string(pq.read_schema(src).field("tools").type)
    assert _hash(src, tmp_path) == reference


def _messages_records() -> list[dict[str, Any]]:
    """The sample as openai-messages records (system first, tool results one message each)."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for line in SAMPLE.read_text("utf-8").splitlines():
        row = json.loads(line)
        by_id.setdefault(row["conversation_id"], []).append(row)
    records = []
    for cid, rows in by_id.items():
        messages: list[dict[str, Any]] = [{"role": "system", "content": rows[0]["system"]}]
        for r in rows:
            if r["role"] == "tool":
                messages += [{"role": "tool", **res} for res in r["tool_results"]]
                if "delay_seconds" in r:
                    messages[-len(r["tool_results"])]["delay_seconds"] = r["delay_seconds"]
                continue
            keep = ("role", "content", "reasoning_content", "tool_calls", "delay_seconds", "intent_codes")
            messages.append({k: r[k] for k in keep if k in r})
        records.append({"conversation_id": cid, "messages": messages, "tools": rows[0].get("tools")})
    return records


def test_parquet_of_openai_messages_conversations(tmp_path: Path) -> None:
    records = _messages_records()
    jsonl = tmp_path / "conversations.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    table = tmp_path / "conversations.parquet"
    # messages as a list of structs, tools as JSON text: both forms occur on the Hub
    as_rows = [{**r, "tools": json.dumps(r["tools"]) if r["tools"] else None} for r in records]
    datasets.Dataset.from_list(as_rows).to_parquet(str(table))
    assert pa.types.is_list(pq.read_schema(table).field("messages").type)
    want = list(traces.read_sources([str(jsonl)], "openai-messages"))
    assert len(want) == 4 and list(traces.read_sources([str(table)], "openai-messages")) == want
    # a table's objects have its struct fields' key order, which the shards keep; tool results
    # are sent with a fixed key order, so every request is the same
    _hash(jsonl, tmp_path, "openai-messages", "jsonl")
    _hash(table, tmp_path, "openai-messages", "parquet")
    prompts = [
        [t.prompt_sha256 for i in traces.Shards(tmp_path / f"shards-{name}") for t in i.turns]
        for name in ("jsonl", "parquet")
    ]
    assert len(prompts[0]) == 17 and prompts[0] == prompts[1]


def test_arrow_ipc_file_is_read_too(tmp_path: Path, reference: str) -> None:
    src = tmp_path / "flat.arrow"
    table = pa.Table.from_pylist(_rows())
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=6)
    assert _hash(src, tmp_path) == reference


# ---------------------------------------------------------------- Hugging Face folders
@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `save_to_disk` Dataset and DatasetDict (two splits) and a Hub-style repository folder."""
    root = tmp_path_factory.mktemp("hf")
    rows = _rows()
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(root / "dataset"), num_shards=2)
    first = [r for r in rows if r["conversation_id"] in ("acme__widgets-101", "acme__parser-7")]
    rest = [r for r in rows if r not in first]
    splits = {"train": datasets.Dataset.from_list(first), "test": datasets.Dataset.from_list(rest)}
    datasets.DatasetDict(splits).save_to_disk(str(root / "dict"))
    repo = root / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "README.md").write_text("---\nlicense: mit\n---\n")
    (repo / ".gitattributes").write_text("*.parquet filter=lfs\n")
    datasets.Dataset.from_list(first).to_parquet(str(repo / "data" / "train-00000-of-00002.parquet"))
    datasets.Dataset.from_list(rest).to_parquet(str(repo / "data" / "train-00001-of-00002.parquet"))
    return root


@pytest.mark.parametrize("folder", ["dataset", "dict", "repo"])
def test_hugging_face_folders_build_the_same_content_hash(
    folder: str, saved: Path, reference: str, tmp_path: Path
) -> None:
    assert _hash(saved / folder, tmp_path) == reference


def test_save_to_disk_files_are_read_in_state_json_order(saved: Path) -> None:
    state = json.loads((saved / "dataset" / "state.json").read_text())
    files = expand_inputs([str(saved / "dataset")])
    assert files == [str(saved / "dataset" / f["filename"]) for f in state["_data_files"]]
    # save_to_disk cuts by rows: a conversation goes on in the next file, and is read whole
    second = pa.ipc.open_stream(pa.memory_map(files[1])).read_all().to_pylist()
    assert second[0]["turn"] > 1
    splits = json.loads((saved / "dict" / "dataset_dict.json").read_text())["splits"]
    files = expand_inputs([str(saved / "dict")])
    assert [Path(f).parent.name for f in files] == splits


def test_a_folder_of_jsonl_files_is_read_in_path_order(tmp_path: Path, reference: str) -> None:
    lines = SAMPLE.read_text("utf-8").splitlines(keepends=True)
    folder = tmp_path / "traces"
    (folder / "b").mkdir(parents=True)
    (folder / ".cache").mkdir()
    (folder / "a.jsonl").write_text("".join(lines[:11]))  # the first two conversations
    zst = zstandard.ZstdCompressor().compress("".join(lines[11:]).encode())
    (folder / "b" / "rest.jsonl.zst").write_bytes(zst)
    (folder / ".cache" / "x.jsonl").write_text("not read\n")
    (folder / "dataset_info.json").write_text("{}")
    assert _hash(folder, tmp_path) == reference
    # shards built into the input folder are not read as input the next time
    build_shards([str(folder)], folder / "shards", BuildOptions(name="d"))
    assert (
        build_shards([str(folder)], folder / "shards", BuildOptions(name="d"), overwrite=True).manifest.content_hash
        == reference
    )


def _hub_cache(root: Path, saved: Path, repo: str = "acme/agent-traces") -> Path:
    """A Hub cache laid out as huggingface_hub lays it out: refs/main → snapshots/<commit>."""
    folder = root / ("datasets--" + repo.replace("/", "--"))
    shutil.copytree(saved / "repo", folder / "snapshots" / COMMIT)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    return folder


def test_hf_id_resolves_offline_from_the_local_cache(
    saved: Path, reference: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    _hub_cache(tmp_path / "hub", saved)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert _hash("hf:acme/agent-traces", tmp_path, name="main") == reference
    assert _hash(f"hf:acme/agent-traces@{COMMIT}", tmp_path, name="commit") == reference
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # HF_HOME/hub
    assert _hash("hf:acme/agent-traces", tmp_path, name="home") == reference


def test_cache_and_snapshot_folders_given_as_paths(saved: Path, reference: str, tmp_path: Path) -> None:
    cached = _hub_cache(tmp_path / "hub", saved)
    assert _hash(cached, tmp_path, name="repo-folder") == reference
    assert _hash(cached / "snapshots" / COMMIT, tmp_path, name="snapshot") == reference


def test_hf_id_not_in_the_cache_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(TraceError) as exc:
        list(traces.read_sources(["hf:acme/missing"], "mlperf-jsonl"))
    message = str(exc.value)
    assert message.startswith("hf:acme/missing: the dataset is not in the local Hugging Face cache (no ")
    assert "nothing is downloaded here" in message
    assert "`hf download acme/missing --repo-type dataset`" in message and "HF_HUB_CACHE" in message
    assert "\n" not in message


def test_a_path_that_looks_like_a_hub_id_gets_the_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        TraceError,
        match="acme/traces: no such file; check the path; for a Hub dataset in the local cache write hf:acme/traces",
    ):
        validate_sources(["acme/traces"], "mlperf-jsonl")


def test_build_is_byte_identical_from_the_same_folder(saved: Path, tmp_path: Path) -> None:
    a = build_shards([str(saved / "dataset")], tmp_path / "a", BuildOptions(name="d"))
    b = build_shards([str(saved / "dataset")], tmp_path / "b", BuildOptions(name="d"))
    assert (a.out / "manifest.json").read_bytes() == (b.out / "manifest.json").read_bytes()
    for shard in a.manifest.shards:
        assert (a.out / shard.file).read_bytes() == (b.out / shard.file).read_bytes()


# ---------------------------------------------------------------- what is not trace data
def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.write(SAMPLE, "sample.jsonl")


def _shard_file(path: Path) -> None:
    build_shards([str(SAMPLE)], path.parent / "built", BuildOptions(name="x"))
    shutil.copy(next((path.parent / "built").glob("*.parquet")), path)


BINARY = {
    "data.jsonl.gz": (lambda p: p.write_bytes(gzip.compress(SAMPLE.read_bytes())), "a gzip-compressed file, not trace data; decompress it (gunzip) or recompress it with zstd as .zst"),
    "data.zip": (_zip, "a zip archive, not trace data; unzip it and pass the files (or the folder) inside"),
    "utf16.jsonl": (lambda p: p.write_bytes(SAMPLE.read_text().encode("utf-16")), "UTF-16 text, not trace data; re-encode it as UTF-8"),
    "data.jsonl": (lambda p: p.write_bytes(zstandard.ZstdCompressor().compress(SAMPLE.read_bytes())), "a zstd-compressed file whose name does not end in .zst; rename it to end in .zst"),
    "table.parquet.zst": (lambda p: p.write_bytes(zstandard.ZstdCompressor().compress(b"PAR1" + b"\0" * 64)), "a zstd-compressed Parquet file; decompress it (zstd -d)"),
    "blob.bin": (lambda p: p.write_bytes(b"\x01\x02\x00\x03" * 10), "a binary file (it holds NUL bytes), not trace data"),
    "part.parquet": (_shard_file, "a trajbench shard file, already built; pass its folder"),
    "cut.parquet": (lambda p: p.write_bytes(b"PAR1" + b"x" * 100), "not a readable Parquet file ("),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_inputs_are_named_for_what_they_are(name: str, tmp_path: Path) -> None:
    make, what = BINARY[name]
    src = tmp_path / name
    make(src)
    for fmt in ("mlperf-jsonl", "openai-messages"):
        _, _, errors = validate_sources([str(src)], fmt)
        assert len(errors) == 1, errors
        assert str(errors[0]).startswith(f"{src}: ") and what in str(errors[0]), str(errors[0])


def test_the_parquet_that_used_to_be_bad_utf8(tmp_path: Path) -> None:
    """A Parquet file given to --format workflow is read as records, not reported as bad text;
    its columns are those of another format, which the error names."""
    src = tmp_path / "flat.parquet"
    pq.write_table(pa.Table.from_pylist(_rows()), src)
    _, _, errors = validate_sources([str(src)], "workflow")
    assert errors and all("UTF-8" not in str(e) for e in errors)
    assert str(errors[0]).startswith(f"{src}: not --format workflow")
    assert str(errors[0]).endswith("pass --format mlperf-jsonl")


# ---------------------------------------------------------------- shard commands given an input
def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        cli.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


SHARD_COMMANDS = {
    "replay run": ["replay", "run", "{x}"],
    "replay sweep": ["replay", "sweep", "{x}", "-c", "1", "--out", "{tmp}/sweep"],
    "traces stats": ["traces", "stats", "{x}"],
    "traces card": ["traces", "card", "{x}", "--out", "{tmp}/card.md"],
    "traces verify": ["traces", "verify", "{x}"],
    "traces show": ["traces", "show", "{x}", "--trajectory", "sim_001", "--turn", "1"],
    "traces export": ["traces", "export", "{x}", "--out", "{tmp}/e.jsonl"],
}


def _inputs(saved: Path, tmp: Path) -> Iterator[tuple[str, str]]:
    parquet = tmp / "flat.parquet"
    pq.write_table(pa.Table.from_pylist(_rows()), parquet)
    yield str(SAMPLE), "is a trace file, not a shard folder"
    yield str(parquet), "is a trace file, not a shard folder"
    yield str(saved / "dataset"), "is a Hugging Face dataset saved with save_to_disk, not a shard folder"
    yield str(saved / "repo"), "is a folder of trace files, not a shard folder"
    yield "hf:acme/agent-traces", "is a Hub dataset, not a shard folder"


@pytest.mark.parametrize("command", sorted(SHARD_COMMANDS))
def test_shard_commands_given_a_trace_input_say_how_to_build_it(
    command: str, saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for x, what in _inputs(saved, tmp_path):
        argv = [a.format(x=x, tmp=tmp_path) for a in SHARD_COMMANDS[command]]
        code, err = _run(argv, capsys)
        assert code == 1, err
        assert err == f"Error: {x} {what}; build it first: trajbench traces build {x} --out shards/\n"
    assert not (tmp_path / "sweep").exists() and not (tmp_path / "e.jsonl").exists()


def test_other_paths_given_as_shards(sample_shards: Path, tmp_path: Path) -> None:
    part = next(sample_shards.glob("*.parquet"))
    cases = {
        str(part): f"{part} is a file of a shard folder; pass the folder that holds it: {sample_shards}",
        str(
            tmp_path / "nope"
        ): f"{tmp_path / 'nope'}: no such folder; pass a folder written by `trajbench traces build`",
        str(tmp_path): f"{tmp_path}: no manifest.json here; pass a folder written by `trajbench traces build`",
    }
    for path, message in cases.items():
        with pytest.raises(ShardError) as exc:
            traces.Shards(path)
        assert str(exc.value) == message


def test_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Opening a FIFO blocks until a writer comes: `traces validate` on one used to hang."""
    import os

    from clirun import trajbench

    pipe = tmp_path / "traces.jsonl"
    os.mkfifo(pipe)
    done = trajbench("traces", "validate", str(pipe), timeout=60)
    assert done.code == 1
    assert done.error_lines == [
        f"Error: {pipe}: a named pipe or socket, not a file; inputs are read more than once, "
        "so save the data to a file first and pass that"
    ]
