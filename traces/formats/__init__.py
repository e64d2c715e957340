"""Input formats: each module turns one kind of agent trace into validated `Trajectory` objects.

`FORMATS` is a plain registry (surfaced as `--format` choices); every reader has the signature
`read(path, sink) -> Iterator[Trajectory]`, reports violations to `sink` and skips the bad
conversation, so one call can list every error of a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from ..model import Trajectory
from ..validate import ErrorSink
from . import mlperf_jsonl

Reader = Callable[[str, ErrorSink], Iterator[Trajectory]]
Writer = Callable[[Iterable[Trajectory], str], int]


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    read: Reader
    write: Writer | None = None


FORMATS: dict[str, Format] = {
    "mlperf-jsonl": Format(
        "mlperf-jsonl",
        "official flat rows, one message per line (.jsonl or .jsonl.zst)",
        mlperf_jsonl.read,
        mlperf_jsonl.write,
    ),
}
