"""Per-turn prompt shards: Parquet + zstd files and `manifest.json` (docs/files.md).

One row per client turn holds the turn's *delta* (its new flat rows), so size grows linearly with
the dataset. Each trajectory instance is exactly one row group: replay and analysis fetch one
instance at a time (`Shards.instance(k)`), so memory follows the largest trajectory. The manifest
records the build options, per-shard rows and sha256, and a content hash over the rows' canonical
JSON, which is the same on any machine and any pyarrow version.

The JSON columns (`delta_json`, `tools_json`, `expected_json`) keep the dataset's own key order:
what is sent must follow the source byte for byte (docs/requests.md). The history marker chosen at
build time for the turn's replayed assistant row is stored beside them (`marker_field`,
`marker_at`), so replay applies exactly what the build checked against the chat template.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..canonical import source_loads
from ..contract import ContractError, from_json
from ..errors import ShardError, TraceError
from ..inputs import PREFIX as HUB_PREFIX
from ..inputs import folder_kind, sniff
from ..requests import Marker, PromptBuilder, Salt, make_salt, wire_messages
from .layout import MANIFEST
from .manifest import FORMAT_VERSION, BuildRecord, InstanceEntry, Manifest
from .verify import REBUILD, check_manifest, shard_path

SCHEMA = pa.schema(
    [
        ("instance_id", pa.string()),
        ("trajectory_id", pa.string()),
        ("repeat", pa.int32()),
        ("turn", pa.int32()),
        ("client_turn_index", pa.int32()),
        ("num_client_turns", pa.int32()),
        ("domain", pa.string()),
        ("salt_repeat", pa.string()),
        ("salt_conversation", pa.string()),
        ("system", pa.string()),
        ("tools_json", pa.string()),
        ("delta_json", pa.string()),
        ("marker_field", pa.string()),
        ("marker_at", pa.int32()),
        ("delay_seconds", pa.float64()),
        ("prompt_sha256", pa.string()),
        ("prompt_chars", pa.int64()),
        ("expected_json", pa.string()),
        ("intent_codes", pa.list_(pa.string())),
        ("isl_tokens", pa.int64()),
        ("delta_tokens", pa.int64()),
        ("expected_osl_tokens", pa.int64()),
    ]
)
COLUMNS = tuple(SCHEMA.names)


@dataclass(frozen=True)
class TurnRow:
    """One shard row: a client turn of one trajectory instance, as stored."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turn: int
    client_turn_index: int
    num_client_turns: int
    domain: str
    salt_repeat: str
    salt_conversation: str
    system: str | None
    tools_json: str | None
    delta_json: str
    marker_field: str | None
    marker_at: int | None
    delay_seconds: float
    prompt_sha256: str
    prompt_chars: int
    expected_json: str | None
    intent_codes: list[str] | None
    isl_tokens: int | None
    delta_tokens: int | None
    expected_osl_tokens: int | None

    @property
    def delta(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = source_loads(self.delta_json)
        return messages

    @property
    def marker(self) -> Marker | None:
        """The history marker of this turn's replayed assistant row (None: none, or marker off)."""
        return None if self.marker_field is None else Marker(self.marker_field, self.marker_at or 0)

    @property
    def expected(self) -> dict[str, Any] | None:
        """The recorded assistant row answering this turn (ground truth), in flat form."""
        return None if self.expected_json is None else source_loads(self.expected_json)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in COLUMNS}


@dataclass(frozen=True)
class Instance:
    """All turns of one trajectory instance (one row group), in turn order."""

    instance_id: str
    trajectory_id: str
    repeat: int
    turns: tuple[TurnRow, ...]


@dataclass(frozen=True)
class TurnPrompt:
    """A turn with its full rebuilt prompt: what replay sends and analysis measures."""

    row: TurnRow
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    sha256: str


def logical_id(source_id: str, repeat: int) -> str:
    """docs/terms.md: `<source>` for the first pass, `<source>__repeat_<k>` after it."""
    return source_id if repeat == 1 else f"{source_id}__repeat_{repeat}"


def iter_prompts(instance: Instance, *, salt: Salt | None = None, markers: bool = True) -> Iterator[TurnPrompt]:
    """Rebuild each turn's prompt from the deltas, with the stored history markers unless
    `markers` is False; `salt` overrides the stored one (replay derives further repeats from one
    pass). Messages lists are fresh per turn."""
    first = instance.turns[0]
    if salt is None:
        salt = Salt(_salt_mode(first), first.salt_repeat, first.salt_conversation)
    builder = PromptBuilder(first.system, salt, source_id=instance.trajectory_id)
    tools: list[dict[str, Any]] | None = None
    for row in instance.turns:
        if row.tools_json is not None:  # a change; "null": no tools from this turn on
            tools = source_loads(row.tools_json)
        builder.add_delta(row.delta, row.marker if markers else None)
        yield TurnPrompt(row, list(builder.messages), tools, builder.sha256())


def without_marker(prompt: TurnPrompt) -> list[dict[str, Any]] | None:
    """The prompt's messages with this turn's history marker taken out of the replayed assistant
    message its delta adds (earlier turns' markers stay); None when the turn carries no marker.
    `traces check-template` sends both forms to the engine: the marker counts only if the
    engine's tokens differ."""
    marker = prompt.row.marker
    if marker is None:
        return None
    added = [wire_messages(flat) for flat in prompt.row.delta]
    start = len(prompt.messages) - sum(len(w) for w in added)
    out = list(prompt.messages)
    for flat, wire in zip(prompt.row.delta, added, strict=True):
        if flat.get("role") == "assistant":
            out[start] = wire[0]
            return out
        start += len(wire)
    return None


def _salt_mode(row: TurnRow) -> str:
    if not row.salt_repeat:
        return "none"
    return "mlperf" if len(row.salt_repeat) == 4 else "strong"


class Shards:
    """A built shard folder: its manifest and random access to instances by ordinal."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        mpath = self.path / MANIFEST
        if not mpath.is_file():
            raise ShardError(not_a_shard_folder(str(path)))
        try:
            raw = json.loads(mpath.read_text("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ShardError(f"{mpath}: not valid JSON ({exc}); rebuild the shards") from None
        if not isinstance(raw, dict) or "format_version" not in raw:
            raise ShardError(
                f"{mpath}: not a trajbench manifest (a JSON object); rebuild with `trajbench traces build`"
            )
        if raw["format_version"] != FORMAT_VERSION:
            raise ShardError(
                f"{mpath}: shard format version {raw['format_version']!r}, this trajbench reads "
                f"{FORMAT_VERSION}; rebuild with `trajbench traces build`"
            )
        try:
            self.manifest = from_json(Manifest, raw, str(mpath))
        except ContractError as exc:
            raise ShardError(f"{exc}; {REBUILD}") from None
        check_manifest(self.path, self.manifest, mpath)
        self._files: dict[str, pq.ParquetFile] = {}
        self._held: dict[str, bytes] = {}  # shard files verified from these bytes (`hold`)

    @property
    def options(self) -> BuildRecord:
        return self.manifest.options

    @property
    def history_marker(self) -> bool:
        return self.options.history_marker

    @property
    def content_hash(self) -> str:
        return self.manifest.content_hash

    @property
    def index(self) -> list[InstanceEntry]:
        """Where each instance is, in FIFO order."""
        return self.manifest.instances

    def __len__(self) -> int:
        return len(self.index)

    def hold(self, name: str, data: bytes) -> None:
        """Read the shard file `name` from `data` from now on: the bytes a verification has just
        hashed (`verify_files`). What is read (and replayed) is then exactly what was checked,
        whatever happens to the file afterwards, and the file is not read from disk again."""
        self._held[name] = data
        old = self._files.pop(name, None)  # opened from the path before: read the held bytes instead
        if old is not None:
            old.close()

    def _file(self, shard: int) -> pq.ParquetFile:
        name = self.manifest.shards[shard].file
        if name not in self._files:
            path = shard_path(self.path, name)
            held = self._held.get(name)
            try:
                self._files[name] = pq.ParquetFile(pa.BufferReader(held) if held is not None else path)
            except (pa.ArrowException, OSError) as exc:
                raise ShardError(f"{path}: not a readable Parquet file ({exc}); {REBUILD}") from None
        return self._files[name]

    def instance_turns(self) -> list[int]:
        """Each stored instance's client turns, in FIFO order, from the Parquet footers of the
        files this object holds open (each footer is read and parsed once, and again by nothing
        that reads the instances through this object)."""
        out: list[int] = []
        for e in self.index:
            f = self._file(e.shard)
            try:
                out.append(f.metadata.row_group(e.group).num_rows)
            except (pa.ArrowException, OSError, IndexError) as exc:
                raise ShardError(
                    f"{self.path / self.manifest.shards[e.shard].file}: not a readable shard file ({exc}); {REBUILD}"
                ) from None
        return out

    def _row_group(self, shard: int, group: int) -> pa.Table:
        """One instance's rows; anything but the Parquet this trajbench writes is a ShardError."""
        f = self._file(shard)
        where = self.path / self.manifest.shards[shard].file
        try:
            table = f.read_row_group(group)
        except (pa.ArrowException, OSError, IndexError) as exc:
            raise ShardError(f"{where}: row group {group} cannot be read ({exc}); {REBUILD}") from None
        if table.column_names != list(COLUMNS):
            raise ShardError(
                f"{where}: columns {', '.join(table.column_names)} are not this trajbench's shard columns; {REBUILD}"
            )
        return table

    def instance(self, k: int) -> Instance:
        e = self.index[k]
        table = self._row_group(e.shard, e.group)
        turns = tuple(TurnRow(**row) for row in table.to_pylist())
        if not turns or turns[0].instance_id != e.instance_id:
            raise ShardError(
                f"{self.path}: row group {e.group} of shard {e.shard} does not hold {e.instance_id}; the folder is corrupt, rebuild it"
            )
        return Instance(e.instance_id, e.trajectory_id, e.repeat, turns)

    def __iter__(self) -> Iterator[Instance]:
        for k in range(len(self)):
            yield self.instance(k)

    def find(self, trajectory_id: str, repeat: int = 1) -> Instance:
        for k, e in enumerate(self.index):
            if e.trajectory_id == trajectory_id and e.repeat == repeat:
                return self.instance(k)
        known = sorted({e.trajectory_id for e in self.index})
        hint = ", ".join(known[:5]) + (" …" if len(known) > 5 else "")
        raise ShardError(f"{self.path}: no trajectory {trajectory_id!r} repeat {repeat} (trajectories: {hint})")

    def close(self) -> None:
        """Close the open files and let go of held bytes (a later read opens the files again)."""
        for f in self._files.values():
            f.close()
        self._files.clear()
        self._held.clear()


def not_a_shard_folder(spec: str) -> str:
    """Why `spec` is not a shard folder, and what to do: a trace input (a file, a dataset folder,
    an `hf:` id) is to be built first, with the very command that builds it."""
    path = Path(spec)
    build = f"build it first: trajbench traces build {shlex.quote(spec)} --out shards/"
    if spec.startswith(HUB_PREFIX) and not path.exists():
        return f"{spec} is a Hub dataset, not a shard folder; {build}"
    if path.is_file():
        if (path.parent / MANIFEST).is_file():
            return f"{spec} is a file of a shard folder; pass the folder that holds it: {path.parent}"
        try:
            sniff(path)
        except TraceError:
            return f"{spec}: a file, not a shard folder; pass a folder written by `trajbench traces build`"
        return f"{spec} is a trace file, not a shard folder; {build}"
    if path.is_dir():
        what = folder_kind(path)
        if what is not None:
            return f"{spec} is {what}, not a shard folder; {build}"
        return f"{spec}: no {MANIFEST} here; pass a folder written by `trajbench traces build`"
    return f"{spec}: no such folder; pass a folder written by `trajbench traces build`"


def salt_for(shards: Shards, trajectory_id: str, repeat: int) -> Salt:
    """The salt of any repeat of a trajectory under the shards' build options."""
    opts = shards.options
    return make_salt(opts.salt, trajectory_id, repeat, opts.seed)
