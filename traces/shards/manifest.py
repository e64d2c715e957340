"""`manifest.json` of a shard folder, as a typed file (docs/files.md).

The build writes it last; `Shards` reads it first. It records what the folder holds (counts, the
instances and where each one is), how it was built (options, tokenizer, history-marker tally),
the source files, each shard file's size and sha256, and the content hash over every row that
identifies the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ..contract import JsonFile
from .layout import MANIFEST

#: The shard layout this trajbench reads and writes; older folders must be rebuilt.
FORMAT_VERSION = 2


class InstanceEntry(NamedTuple):
    """Where one trajectory instance is: its shard file and row group (a JSON array on disk)."""

    instance_id: str
    trajectory_id: str
    repeat: int
    shard: int
    group: int


@dataclass(frozen=True)
class ShardFile:
    file: str
    rows: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class SourceFile:
    file: str
    sha256: str


@dataclass(frozen=True)
class Counts:
    trajectories: int
    instances: int
    client_turns: int


@dataclass(frozen=True)
class TokenizerInfo:
    name: str
    fingerprint: str


@dataclass(frozen=True)
class BuildRecord:
    """The build options a folder was made with (what `traces build` options decide)."""

    format: str
    salt: str
    seed: int
    repeats: int
    history_marker: bool
    name: str


@dataclass(frozen=True)
class MarkerTally:
    """Where the history marker went in the replayed assistant messages (docs/history-marker.md)."""

    assistant_messages: int
    checked_with_template: str | None
    positions: dict[str, int]
    unmarked: list[dict[str, Any]]


@dataclass(frozen=True)
class Manifest(JsonFile):
    FILE = MANIFEST

    format_version: int
    name: str
    generated_by: str
    options: BuildRecord
    tokenizer: TokenizerInfo | None
    sources: list[SourceFile]
    counts: Counts
    history_marker: MarkerTally | None
    content_hash: str
    shards: list[ShardFile]
    instances: list[InstanceEntry]
