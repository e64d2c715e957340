"""`traces export --format`: every format that can hold the data round-trips to the same content
hash (build → export → build), a format that cannot hold a field drops it with a count per field
that matches the data, read-only formats and output names of another format are refused, and
an export is written whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import cli
from traces import BuildOptions, ExportResult, Shards, TraceError, build_shards, export_shards
from traces.formats import FORMATS
from traces.synth import iter_synthetic

SAMPLE = Path(__file__).resolve().parents[3] / "traces" / "data" / "sample.jsonl"
WRITTEN = ("mlperf-jsonl", "openai-messages", "workflow")
write_flat = FORMATS["mlperf-jsonl"].write


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small synthetic set (coding and workflow conversations) and its workflow part alone."""
    root = tmp_path_factory.mktemp("synth")
    trajs = list(iter_synthetic(seed=3, scale=0.02))
    write_flat(trajs, str(root / "all.jsonl"))
    write_flat([t for t in trajs if t.domain == "workflow"], str(root / "workflow.jsonl"))
    return {"all": root / "all.jsonl", "workflow": root / "workflow.jsonl"}


def _build(src: Path, out: Path, fmt: str = "mlperf-jsonl", repeats: int = 1) -> str:
    return build_shards([str(src)], out, BuildOptions(format=fmt, repeats=repeats, name="d")).manifest.content_hash


@pytest.mark.parametrize("fmt", WRITTEN)
def test_build_export_build_gives_the_same_content_hash(fmt: str, synthetic: dict[str, Path], tmp_path: Path) -> None:
    src = synthetic["workflow" if fmt == "workflow" else "all"]
    first = _build(src, tmp_path / "a", repeats=2)
    res = export_shards(tmp_path / "a", tmp_path / f"e.{fmt}.jsonl.zst", fmt=fmt, repeat=2)
    assert res.dropped == {}
    assert res.conversations == len(Shards(tmp_path / "a")) // 2
    assert _build(res.out, tmp_path / "b", fmt=fmt, repeats=2) == first
    # the same input gives the same bytes
    again = export_shards(tmp_path / "a", tmp_path / f"f.{fmt}.jsonl.zst", fmt=fmt, repeat=2)
    assert again.out.read_bytes() == res.out.read_bytes()


def test_sample_round_trips_through_openai_messages_and_back_to_flat_rows(tmp_path: Path) -> None:
    first = _build(SAMPLE, tmp_path / "a")
    export_shards(tmp_path / "a", tmp_path / "m.jsonl", fmt="openai-messages")
    assert _build(tmp_path / "m.jsonl", tmp_path / "b", fmt="openai-messages") == first
    export_shards(tmp_path / "b", tmp_path / "flat.jsonl")
    assert _build(tmp_path / "flat.jsonl", tmp_path / "c") == first


def test_export_keeps_the_datasets_key_order(tmp_path: Path) -> None:
    """Key order is what is sent (docs/requests.md): export must not sort it."""
    _build(SAMPLE, tmp_path / "a")
    export_shards(tmp_path / "a", tmp_path / "e.jsonl")
    source = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    back = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert back == source
    assert [list(r.get("tools", [{}])[0]) for r in back] == [list(r.get("tools", [{}])[0]) for r in source]
    calls = [list(c["function"]) for r in back for c in r.get("tool_calls", [])]
    assert calls and calls == [list(c["function"]) for r in source for c in r.get("tool_calls", [])]


def _lossy(path: Path) -> dict[str, int]:
    """The sample's workflow conversations with what messages records cannot hold; returns how
    many rows carry each such field."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    rows = [r for r in rows if r["conversation_id"].startswith("sim_")]
    expected: dict[str, int] = {}
    for k, r in enumerate(rows):
        if r["role"] == "assistant":
            r["temperature"] = 0.6  # a generation parameter
            r["delay_seconds"] = 0.5  # a delay on an assistant row: workflow keeps client delays only
            expected["temperature"] = expected.get("temperature", 0) + 1
            expected["delay_seconds"] = expected.get("delay_seconds", 0) + 1
        if k % 3 == 0:
            r["annotator"] = "x"  # an extra field
            expected["annotator"] = expected.get("annotator", 0) + 1
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return expected


def test_a_lossy_conversion_counts_each_dropped_field(tmp_path: Path) -> None:
    expected = _lossy(tmp_path / "lossy.jsonl")
    original = _build(tmp_path / "lossy.jsonl", tmp_path / "a")
    res = export_shards(tmp_path / "a", tmp_path / "wf.jsonl", fmt="workflow")
    assert res.dropped == dict(sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])))
    messages = export_shards(tmp_path / "a", tmp_path / "m.jsonl", fmt="openai-messages")
    assert messages.dropped == {k: n for k, n in res.dropped.items() if k != "delay_seconds"}  # it holds them
    # the loss is real and exactly that: the rebuilt set lacks those fields, and only them
    rebuilt = _build(tmp_path / "wf.jsonl", tmp_path / "b", fmt="workflow")
    assert rebuilt != original
    export_shards(tmp_path / "b", tmp_path / "back.jsonl")
    back = [json.loads(line) for line in (tmp_path / "back.jsonl").read_text().splitlines()]
    assert not any({"temperature", "annotator"} & set(r) for r in back)
    assert not any("delay_seconds" in r for r in back if r["role"] == "assistant")
    stripped = [json.loads(line) for line in (tmp_path / "lossy.jsonl").read_text().splitlines()]
    for r in stripped:
        r.pop("temperature", None), r.pop("annotator", None)
        if r["role"] == "assistant":
            r.pop("delay_seconds")
    (tmp_path / "stripped.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stripped))
    assert _build(tmp_path / "stripped.jsonl", tmp_path / "c") == rebuilt


def test_tool_lists_that_change_are_counted_for_messages_and_refused_by_workflow(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    rows = [r for r in rows if r["conversation_id"] == "sim_001"]
    tools = rows[0]["tools"]
    client = [r for r in rows if r["role"] in ("user", "tool")]
    client[-1]["tools"] = tools[:1]  # the last client turn is sent fewer tools
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _build(tmp_path / "t.jsonl", tmp_path / "a")
    assert export_shards(tmp_path / "a", tmp_path / "m.jsonl", fmt="openai-messages").dropped == {"tools": 1}
    with pytest.raises(TraceError, match="the tools change between turns; the workflow format has one tool list"):
        export_shards(tmp_path / "a", tmp_path / "w.jsonl", fmt="workflow")
    assert not (tmp_path / "w.jsonl").exists() and not list(tmp_path.glob(".tmp-*"))


def test_workflow_refuses_coding_conversations_and_leaves_no_file(tmp_path: Path) -> None:
    _build(SAMPLE, tmp_path / "a")
    (tmp_path / "w.jsonl").write_text("the previous export\n")
    with pytest.raises(TraceError) as exc:
        export_shards(tmp_path / "a", tmp_path / "w.jsonl", fmt="workflow")
    assert str(exc.value) == (
        "conversation acme__widgets-101: the workflow format needs ids like sim_NNN; "
        "export as mlperf-jsonl, which holds every conversation"
    )
    assert (tmp_path / "w.jsonl").read_text() == "the previous export\n"  # replaced only by a finished file
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("fmt", ["atif", "mini-swe-agent", "snapshots"])
def test_read_only_formats_say_why(fmt: str, sample_shards: Path, tmp_path: Path) -> None:
    with pytest.raises(TraceError) as exc:
        export_shards(sample_shards, tmp_path / "x.jsonl", fmt=fmt)
    message = str(exc.value)
    assert message.startswith(f"--format {fmt} is read only: ")
    assert message.endswith("export as one of mlperf-jsonl, workflow, openai-messages (docs/dataset-format.md)")


NAMES: dict[str, str] = {
    "x.parquet": "the name says Parquet",
    "x.json": "the name says one JSON document",
    "case.traj.json": "the name says a mini-swe-agent trajectory",
    "x.jsonl.gz": "the name says gzip",
    "x.arrow": "the name says Arrow",
    "x.txt": "the name does not end in .jsonl or .jsonl.zst",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_output_names_of_another_format_are_refused(name: str, sample_shards: Path, tmp_path: Path) -> None:
    for fmt in WRITTEN:
        with pytest.raises(TraceError) as exc:
            export_shards(sample_shards, tmp_path / name, fmt=fmt)
        assert str(exc.value) == (
            f"--out {tmp_path / name}: {NAMES[name]}, but --format {fmt} is written as JSON Lines; "
            "name it *.jsonl or *.jsonl.zst (docs/dataset-format.md, Export)"
        )
    assert list(tmp_path.iterdir()) == []


def test_cli_export_warns_with_counts_on_stderr(tmp_path: Path) -> None:
    n = _lossy(tmp_path / "lossy.jsonl")
    _build(tmp_path / "lossy.jsonl", tmp_path / "a")
    res = CliRunner().invoke(
        cli, ["traces", "export", str(tmp_path / "a"), "--format", "workflow", "--out", str(tmp_path / "w.jsonl")]
    )
    assert res.exit_code == 0, res.output
    assert res.stdout == f"wrote 2 records (2 conversations, workflow) to {tmp_path / 'w.jsonl'}\n"
    assert res.stderr == (
        "Warning: the workflow format cannot hold every field of these shards; dropped: "
        f"delay_seconds on {n['delay_seconds']} turns, temperature on {n['temperature']} turns, "
        f'annotator on {n["annotator"]} turns (docs/dataset-format.md, "Export")\n'
    )


def test_export_result_text() -> None:
    res = ExportResult(Path("x.jsonl"), "workflow", 3, 3, {"delay_seconds": 1234, "name": 1})
    assert res.dropped_text() == "delay_seconds on 1,234 turns, name on 1 turn"
