"""The formats' registry: `FORMATS` is a plain registry (surfaced as `--format` choices); every reader has the signature
`read(path, sink) -> Iterator[Trajectory]`, reports violations to `sink` and skips the bad
conversation, so one call can list every error of a file.

The formats `traces export` writes have a record codec: `to_records(trajectory)` gives the lines
to write and `from_records(records, path, sink)` reads them back the way the reader would, so an
export can count what the format could not hold (docs/dataset-format.md, "Export"); `write`
writes those lines (JSON Lines, plain or `.zst`). The others say why they are read only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ErrorSink, TraceError
from ..inputs import write_json_lines
from ..model import Trajectory
from . import atif, mini_swe_agent, mlperf_jsonl, openai_messages, snapshots, workflow
from .openai_messages import RecordReader

Reader = Callable[[str, ErrorSink], Iterator[Trajectory]]
FilesReader = Callable[[Sequence[str], ErrorSink], Iterator[Trajectory]]
ToRecords = Callable[[Trajectory], list[dict[str, Any]]]
FromRecords = Callable[[list[dict[str, Any]], str, ErrorSink], Trajectory | None]


@dataclass(frozen=True)
class Format:
    """A format's name, what it is, its reader and its record codec. `read_files`, when a format has one,
    reads the files of one input as one sequence of records: a format whose conversations span
    several records (one per message) needs it for tables saved in shards. `to_records` and
    `from_records` are its export codec; `read_only` says why a format has none."""

    name: str
    description: str
    read: Reader
    read_files: FilesReader | None = None
    to_records: ToRecords | None = None
    from_records: FromRecords | None = None
    read_only: str | None = None

    def write(self, trajectories: Iterable[Trajectory], path: str) -> int:
        """Write the trajectories' records, one per line (plain or `.zst`); returns how many."""
        to_records = self.to_records
        if to_records is None:
            raise TraceError(f"format {self.name} is read only: {self.read_only}")
        return write_json_lines((record for traj in trajectories for record in to_records(traj)), path)


def _one_record_per_conversation(
    to_record: Callable[[Trajectory], dict[str, Any]], read: RecordReader
) -> tuple[ToRecords, FromRecords]:
    """The codec (`to_records`, `from_records`) of a format that holds a conversation in one record."""

    def to_records(traj: Trajectory) -> list[dict[str, Any]]:
        return [to_record(traj)]

    def from_records(records: list[dict[str, Any]], path: str, sink: ErrorSink) -> Trajectory | None:
        return read(records[0], path, None, "", sink)

    return to_records, from_records


FORMATS: dict[str, Format] = {
    "mlperf-jsonl": Format(
        "mlperf-jsonl",
        "official flat rows, one message per line (.jsonl or .jsonl.zst)",
        mlperf_jsonl.read,
        mlperf_jsonl.read_files,
        mlperf_jsonl.to_records,
        mlperf_jsonl.from_records,
    ),
    "snapshots": Format(
        "snapshots",
        "cumulative OpenAI-messages snapshots per conversation (the last one is kept)",
        snapshots.read,
        read_only="it is the dump form of the workflow simulations (many growing checkpoints per "
        "conversation, read back sorted by id); openai-messages holds the same final conversations",
    ),
    "mini-swe-agent": Format(
        "mini-swe-agent",
        "mini-swe-agent trajectory JSON (trajectory_format mini-swe-agent-1.x), e.g. DeepSWE",
        mini_swe_agent.read,
        read_only="a mini-swe-agent trajectory has one bash tool and message timestamps, not tool "
        "lists and delays, so writing one would make up data",
    ),
    "atif": Format(
        "atif",
        "Harbor's Agent Trajectory Interchange Format (schema_version ATIF-v1.x)",
        atif.read,
        read_only="ATIF records no tool definitions and step timestamps rather than delays, so "
        "writing it would make up data",
    ),
    "workflow": Format(
        "workflow",
        "customer-support workflow records (data_cards/workflow-format.md), read and write",
        workflow.read,
        None,
        *_one_record_per_conversation(workflow.to_record, workflow.record_trajectory),
    ),
    "openai-messages": Format(
        "openai-messages",
        "generic JSONL, one {messages, tools} conversation per line",
        openai_messages.read,
        None,
        *_one_record_per_conversation(openai_messages.to_record, openai_messages.record_trajectory),
    ),
}
