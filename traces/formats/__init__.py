"""Input formats: each module turns one kind of agent trace into validated `Trajectory` objects.

`FORMATS` is a plain registry (surfaced as `--format` choices); every reader has the signature
`read(path, sink) -> Iterator[Trajectory]`, reports violations to `sink` and skips the bad
conversation, so one call can list every error of a file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..model import Trajectory
from ..validate import ErrorSink
from . import atif, mini_swe_agent, mlperf_jsonl, openai_messages, snapshots, workflow

Reader = Callable[[str, ErrorSink], Iterator[Trajectory]]
FilesReader = Callable[[Sequence[str], ErrorSink], Iterator[Trajectory]]
Writer = Callable[[Iterable[Trajectory], str], int]


@dataclass(frozen=True)
class Format:
    """A format's name, what it is, its reader and writer. `read_files`, when a format has one,
    reads the files of one input as one sequence of records: a format whose conversations span
    several records (one per message) needs it for tables saved in shards."""

    name: str
    description: str
    read: Reader
    write: Writer | None = None
    read_files: FilesReader | None = None


FORMATS: dict[str, Format] = {
    "mlperf-jsonl": Format(
        "mlperf-jsonl",
        "official flat rows, one message per line (.jsonl or .jsonl.zst)",
        mlperf_jsonl.read,
        mlperf_jsonl.write,
        mlperf_jsonl.read_files,
    ),
    "snapshots": Format(
        "snapshots",
        "cumulative OpenAI-messages snapshots per conversation (the last one is kept)",
        snapshots.read,
    ),
    "mini-swe-agent": Format(
        "mini-swe-agent",
        "mini-swe-agent trajectory JSON (trajectory_format mini-swe-agent-1.x), e.g. DeepSWE",
        mini_swe_agent.read,
    ),
    "atif": Format(
        "atif",
        "Harbor's Agent Trajectory Interchange Format (schema_version ATIF-v1.x)",
        atif.read,
    ),
    "workflow": Format(
        "workflow",
        "customer-support workflow records (data_cards/workflow-format.md), read and write",
        workflow.read,
        workflow.write,
    ),
    "openai-messages": Format(
        "openai-messages",
        "generic JSONL, one {messages, tools} conversation per line",
        openai_messages.read,
    ),
}
