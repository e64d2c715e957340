"""`traces export`: shards back to trace data, in any format that can hold it (the inverse of
`traces build`; docs/dataset-format.md, "Export").

Shards keep each turn's recorded rows verbatim, so one repeat's instances give back the source
conversations: system and tools go on the first row (and tools again wherever they changed), and
the answer after the last client turn is taken from that turn's ground truth. Each conversation
is then written with the chosen format's record codec (`Format.to_records`), keys in the
dataset's own order (so request bytes, and the content hash of a rebuild, stay the same).

A format may not hold everything: openai-messages and workflow records have no place for
generation parameters or extra fields and one tool list per conversation, workflow keeps delays
on client turns only. Every written conversation is read back with the format's own reader
(`Format.from_records`) and compared with what was exported, field by field; what differs is
counted per field, so the loss is stated, never silent. A record the format cannot express at
all (a workflow id that is not sim_NNN) stops the export.

The file is written beside its destination and renamed into place when complete, so a failed
export leaves nothing behind, and an existing file is replaced only by a finished one.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..canonical import source_json, source_loads
from ..errors import ShardError, TraceError, TraceFormatError
from ..formats import FORMATS, FlatRow, Format, build_trajectory
from ..inputs import open_text_writer
from ..model import Trajectory
from .reader import Instance, Shards

#: Output names every written format produces: all of them are JSON Lines.
OUT_SUFFIXES = (".jsonl", ".jsonl.zst")

#: What an output name says it is, when it is not JSON Lines.
_NAMED = (
    (".traj.json", "a mini-swe-agent trajectory"),
    (".parquet", "Parquet"),
    (".arrow", "Arrow"),
    (".json", "one JSON document"),
    (".json.zst", "one JSON document"),
    (".csv", "CSV"),
    (".gz", "gzip"),
    (".zip", "a zip archive"),
)

_ROW_FIELDS = ("content", "reasoning_content", "name", "tool_calls", "tool_results", "delay_seconds", "intent_codes")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote, and what the format could not hold: field → turns it was lost on."""

    out: Path
    format: str
    conversations: int
    records: int
    dropped: dict[str, int] = field(default_factory=dict)

    def dropped_text(self) -> str:
        """`delay_seconds on 1,234 turns, temperature on 12 turns` (most first)."""
        return ", ".join(f"{name} on {n:,} turn{'s' if n != 1 else ''}" for name, n in self.dropped.items())


def writable(fmt: str) -> Format:
    """The format `fmt` if `traces export` can write it; else `TraceError` saying why not."""
    form = FORMATS.get(fmt)
    if form is None:
        raise TraceError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if form.to_records is None or form.from_records is None:
        can = ", ".join(n for n, f in FORMATS.items() if f.to_records is not None)
        raise TraceError(
            f"--format {fmt} is read only: {form.read_only or 'it has no writer'}; export as one of {can} "
            "(docs/dataset-format.md)"
        )
    return form


def check_out_name(out: str | os.PathLike[str], fmt: str) -> None:
    """Refuse an output name that says another format than the JSON Lines every format writes."""
    path = Path(out)
    name = path.name.lower()
    if name.endswith(OUT_SUFFIXES):
        if path.is_dir():
            raise TraceError(f"--out {out}: is a folder; name the file to write, e.g. {path / 'data.jsonl'}")
        return
    said = next((what for suffix, what in _NAMED if name.endswith(suffix)), None)
    why = f"the name says {said}" if said else "the name does not end in .jsonl or .jsonl.zst"
    raise TraceError(
        f"--out {out}: {why}, but --format {fmt} is written as JSON Lines; name it *.jsonl or *.jsonl.zst "
        "(docs/dataset-format.md, Export)"
    )


def instance_flat_rows(instance: Instance) -> Iterator[dict[str, Any]]:
    for k, turn in enumerate(instance.turns):
        delta = turn.delta
        for j, flat in enumerate(delta):
            row = {"conversation_id": instance.trajectory_id, **flat}
            is_client_row = j == len(delta) - 1
            if k == 0 and j == 0 and turn.system is not None:
                row["system"] = turn.system
            if is_client_row and turn.tools_json is not None and (tools := source_loads(turn.tools_json)) is not None:
                row["tools"] = tools  # a change to no tools ("null") is the rule's own default: nothing written
            yield row
    last = instance.turns[-1]
    if last.expected_json is not None:
        yield {"conversation_id": instance.trajectory_id, **source_loads(last.expected_json)}


def _trajectory(shards: Shards, instance: Instance) -> Trajectory:
    """The recorded conversation of one instance, validated as the build validated it."""
    errors: list[TraceFormatError] = []
    rows = [FlatRow(r) for r in instance_flat_rows(instance)]
    traj = build_trajectory(str(shards.path), instance.trajectory_id, rows, errors.append)
    if traj is None:
        raise ShardError(f"{shards.path}: {instance.instance_id} does not read back ({errors[0].rule}); rebuild it")
    return traj


def _losses(before: Trajectory, after: Trajectory, fmt: str) -> Counter[str]:
    """Per field, the turns whose value did not come back from the written records."""
    if [(r.turn, r.role) for r in before.rows] != [(r.turn, r.role) for r in after.rows]:
        raise TraceError(
            f"conversation {before.id}: the {fmt} format cannot keep its turns apart; export as mlperf-jsonl"
        )
    lost: Counter[str] = Counter()
    if before.system != after.system:
        lost["system"] += 1
    tools_before, tools_after = before.effective_tools(), after.effective_tools()
    for k, (a, b) in enumerate(zip(before.rows, after.rows, strict=True)):
        for name in _ROW_FIELDS:
            if getattr(a, name) != getattr(b, name):
                lost[name] += 1
        if a.is_client and tools_before[k] != tools_after[k]:
            lost["tools"] += 1
        for mapping, other in ((a.params, b.params), (a.extra, b.extra)):
            for key, value in mapping.items():
                if other.get(key) != value:
                    lost[key] += 1
    return lost


def _records(form: Format, traj: Trajectory, out: str) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The records of one conversation and what reading them back loses."""
    assert form.to_records is not None and form.from_records is not None
    try:
        records = form.to_records(traj)
    except TraceError as exc:
        raise TraceError(f"{exc}; export as mlperf-jsonl, which holds every conversation") from None
    errors: list[TraceFormatError] = []
    back = form.from_records(records, out, errors.append)
    if back is None:
        rule = errors[0].rule if errors else "it does not read back"
        raise TraceError(
            f"conversation {traj.id} cannot be written as {form.name}: {rule}; export as mlperf-jsonl, which holds it"
        )
    return records, _losses(traj, back, form.name)


def export_shards(
    shards_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, fmt: str = "mlperf-jsonl", repeat: int = 1
) -> ExportResult:
    """Write the instances of one repeat as `fmt` records to `out` (JSON Lines, plain or `.zst`),
    atomically; returns what was written and what the format could not hold."""
    form = writable(fmt)
    check_out_name(out, fmt)
    shards = Shards(Path(shards_dir))
    target = Path(out)
    tmp = target.with_name(f".tmp-{os.getpid()}-{target.name}")  # same suffix: .zst is compressed
    lost: Counter[str] = Counter()
    conversations = records = 0
    try:
        with open_text_writer(tmp) as fh:
            for k, entry in enumerate(shards.index):
                if entry.repeat != repeat:
                    continue
                recs, missing = _records(form, _trajectory(shards, shards.instance(k)), str(target))
                lost.update(missing)
                for rec in recs:
                    fh.write(source_json(rec))
                    fh.write("\n")
                conversations += 1
                records += len(recs)
        if conversations == 0:
            raise TraceError(f"{shards_dir}: holds no instances of repeat {repeat}")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        shards.close()
    dropped = dict(sorted(lost.items(), key=lambda item: (-item[1], item[0])))
    return ExportResult(target, fmt, conversations, records, dropped)
