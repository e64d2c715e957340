"""`traces build`: sources → validated trajectories → salted per-turn shards, atomically.

The build streams: one trajectory is in memory at a time, rows go to a Parquet writer as one row
group per trajectory instance, and shards roll over at instance boundaries. Everything is written
into a temporary sibling folder and renamed into place only when the whole build succeeded, so a
failed build leaves nothing at the destination.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import queue
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from ..canonical import content_line, sha256_file, source_json
from ..errors import TraceError
from ..formats import FORMATS, read_sources, row_to_flat
from ..inputs import PREFIX as HUB_PREFIX
from ..inputs import expand_inputs
from ..model import Trajectory
from ..outdir import replace_dir, sweep_stale, temp_sibling, unwritable
from ..parallel import check_jobs
from ..progress import Progress
from ..requests import SALT_MODES, Marker, PromptBuilder, make_salt, wire_messages
from ..requests import choose as choose_marker
from ..version import __version__
from .layout import check_replaceable, shard_file
from .manifest import (
    FORMAT_VERSION,
    BuildRecord,
    Counts,
    InstanceEntry,
    Manifest,
    MarkerTally,
    ShardFile,
    SourceFile,
    TokenizerInfo,
)
from .reader import SCHEMA, logical_id


class PromptCount(Protocol):
    """Running token count of one prompt, fed one turn's new messages at a time."""

    def add(self, messages: list[dict[str, Any]]) -> int:
        """Append messages; return the tokens they add to the prompt (the turn's delta)."""

    def isl(self) -> int:
        """Tokens of the whole prompt so far, as the server sees it (with generation prompt)."""


class TokenCounter(Protocol):
    """What the build needs of a tokenizer (traces.tokenizers provides implementations).

    A counter with a chat template also has `history_render(messages) -> str`, the template's text
    of a short conversation, which the history-marker check uses when it is there (`MarkerCheck`);
    without one the rule's order alone chooses the marker.
    """

    name: str
    fingerprint: str

    def start(self, tools: list[dict[str, Any]] | None) -> PromptCount: ...

    def output_tokens(self, message: dict[str, Any], *, structured: bool | None = None) -> int | None:
        """Tokens of an answer as the reference counts its output (None for an empty answer)."""


@dataclass(frozen=True)
class BuildOptions:
    format: str = "mlperf-jsonl"
    salt: str = "mlperf"
    seed: int = 0
    repeats: int = 1
    history_marker: bool = True
    name: str = "dataset"
    rows_per_shard: int = 20_000

    def check(self) -> None:
        if self.format not in FORMATS:
            raise TraceError(f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}")
        if self.salt not in SALT_MODES:
            raise TraceError(f"unknown salt mode {self.salt!r}; choose one of {', '.join(SALT_MODES)}")
        if self.repeats < 1:
            raise TraceError(f"--repeats must be >= 1, got {self.repeats}")
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise TraceError(f"--name {self.name!r} must be a plain file-name stem")


@dataclass(frozen=True)
class BuildResult:
    out: Path
    manifest: Manifest


#: A build fails when the chat template erases the history marker in more replayed assistant
#: messages than this share (docs/history-marker.md).
MAX_UNMARKED_SHARE = 0.01


class MarkerCheck:
    """Chooses each replayed assistant message's history marker and keeps the build's tally.

    With a tokenizer, a candidate counts only if the chat template's rendering of the message's
    next-turn context changes with it; without one, the rule's order alone decides. The choice of
    a (trajectory, turn) is made once and reused by every repeat.
    """

    def __init__(self, counter: TokenCounter | None) -> None:
        self.render = getattr(counter, "history_render", None)
        self.template = counter.name if self.render is not None and counter is not None else None
        self.chosen: dict[tuple[str, int], Marker | None] = {}
        self.positions: Counter[str] = Counter()
        self.unmarked: list[tuple[str, int]] = []

    def choose(
        self, key: tuple[str, int], message: dict[str, Any], before: list[dict[str, Any]], after: list[dict[str, Any]]
    ) -> Marker | None:
        if key in self.chosen:
            return self.chosen[key]
        marker = choose_marker(message, self._differs(message, before, after) if self.render is not None else None)
        self.adopt(key, marker)
        return marker

    def adopt(self, key: tuple[str, int], marker: Marker | None) -> None:
        """Take a choice made elsewhere (a `--jobs` worker: the choice depends only on the
        message and the template, so it is the one this check would make); tallied once per key."""
        if key in self.chosen:
            return
        self.chosen[key] = marker
        if marker is None:
            self.unmarked.append(key)
            self.positions["unmarked"] += 1
        else:
            self.positions["leading space" if marker.at == 0 else marker.field] += 1

    def _differs(
        self, message: dict[str, Any], before: list[dict[str, Any]], after: list[dict[str, Any]]
    ) -> Callable[[dict[str, Any]], bool]:
        """Does a marked copy of `message` render differently from it, in its next-turn context?"""
        render = self.render
        assert render is not None
        plain = render([*before, message, *after])
        return lambda marked: render([*before, marked, *after]) != plain

    def summary(self) -> MarkerTally:
        return MarkerTally(
            assistant_messages=sum(self.positions.values()),
            checked_with_template=self.template,
            positions=dict(sorted(self.positions.items())),
            unmarked=[{"conversation_id": c, "turn": t} for c, t in self.unmarked[:20]],
        )

    def verify(self) -> None:
        """Refuse a build whose template erases the marker too often."""
        total = sum(self.positions.values())
        n = len(self.unmarked)
        if total and n / total > MAX_UNMARKED_SHARE:
            where = ", ".join(f"{c} turn {t}" for c, t in self.unmarked[:5])
            raise TraceError(
                f"the chat template of {self.template} erases the history marker in "
                f"{n} of {total} replayed assistant messages ({100 * n / total:.1f} %, over the "
                f"{100 * MAX_UNMARKED_SHARE:g} % allowed), e.g. {where}; the marker would not stop cache reuse of "
                "generated tokens there (docs/history-marker.md). Build with --no-history-marker (reference "
                "prompts, no marker) or with the tokenizer of the model you will serve"
            )


def instance_rows(
    traj: Trajectory, repeat: int, opts: BuildOptions, counter: TokenCounter | None, markers: MarkerCheck | None = None
) -> list[dict[str, Any]]:
    """The shard rows (one per client turn) of one trajectory instance."""
    salt = make_salt(opts.salt, traj.id, repeat, opts.seed)
    system = traj.system
    builder = PromptBuilder(system, salt, source_id=traj.id)
    tools_per_row = traj.effective_tools()
    client = traj.client_indices()
    iid = logical_id(traj.id, repeat)
    if opts.history_marker and markers is None:
        markers = MarkerCheck(None)
    out: list[dict[str, Any]] = []
    prev_tools_json: str | None = None
    tools_cache: dict[int, str] = {}  # one serialisation per tools list, not per turn
    count = None
    start = 0
    head = 0  # builder.messages[:head]: the system prompt and the first user message
    answered = 0  # messages of the previous turn's client row, which the next assistant row answers
    for k, idx in enumerate(client):
        delta = [row_to_flat(None, r, with_context=False) for r in traj.rows[start : idx + 1]]
        start = idx + 1
        tools = tools_per_row[idx]
        tools_json = _tools_json(tools, tools_cache)
        if counter is not None and count is None:
            count = counter.start(list(tools) if tools else None)
            if builder.messages:
                count.add(list(builder.messages))
        marker = None
        if markers is not None and (a := _assistant(delta)) is not None:
            # the message in its next-turn context: system, first user message, the client
            # message(s) it answers, the message, and the client message(s) that follow it
            msgs = builder.messages
            before = msgs[:head] + msgs[max(head, len(msgs) - answered) :]
            after = [m for flat in delta[a + 1 :] for m in wire_messages(flat)]
            marker = markers.choose((traj.id, traj.rows[idx].turn), wire_messages(delta[a])[0], before, after)
        added = builder.add_delta(delta, marker)
        answered = len(wire_messages(delta[-1]))
        if not head:
            head = len(builder.messages)
        answer = traj.answer_after(idx)
        expected = row_to_flat(None, answer, with_context=False) if answer is not None else None
        row: dict[str, Any] = {
            "instance_id": iid,
            "trajectory_id": traj.id,
            "repeat": repeat,
            "turn": traj.rows[idx].turn,
            "client_turn_index": k,
            "num_client_turns": len(client),
            "domain": traj.domain,
            "salt_repeat": salt.repeat,
            "salt_conversation": salt.conversation,
            "system": system if k == 0 else None,
            "tools_json": _tools_change(tools_json, prev_tools_json),
            "delta_json": source_json(delta),
            "marker_field": None if marker is None else marker.field,
            "marker_at": None if marker is None else marker.at,
            "delay_seconds": float(traj.rows[idx].delay_seconds or 0.0),
            "prompt_sha256": builder.sha256(),
            "prompt_chars": builder.chars,
            "expected_json": source_json(expected) if expected is not None else None,
            "intent_codes": [c.upper() for c in answer.intent_codes]
            if answer is not None and answer.intent_codes
            else None,
            "isl_tokens": None,
            "delta_tokens": None,
            "expected_osl_tokens": None,
        }
        if count is not None:
            assert counter is not None
            row["delta_tokens"] = count.add(added)
            row["isl_tokens"] = count.isl()
            if expected is not None:
                row["expected_osl_tokens"] = counter.output_tokens(expected) or 0
        prev_tools_json = tools_json
        out.append(row)
    return out


def _assistant(delta: list[dict[str, Any]]) -> int | None:
    """Index of the replayed assistant row in a turn's delta (the role order allows one at most)."""
    return next((j for j, flat in enumerate(delta) if flat["role"] == "assistant"), None)


def _tools_change(tools_json: str | None, before: str | None) -> str | None:
    """A row's `tools_json`: stored only where the tools change (None: as the turn before). A
    change to no tools at all is stored as JSON `null`, so the reader sends none from then on
    instead of keeping the earlier turn's tools."""
    if tools_json == before:
        return None
    return "null" if tools_json is None else tools_json


def _tools_json(tools: tuple[dict[str, Any], ...] | None, cache: dict[int, str]) -> str | None:
    if tools is None:
        return None
    key = id(tools)
    if key not in cache:
        cache[key] = source_json(list(tools))
    return cache[key]


@dataclass(frozen=True)
class _Built:
    """One trajectory instance ready for the writer: its row group, its lines of the content
    hash, and the history-marker choices made for it (in the order they were made)."""

    trajectory_id: str
    repeat: int
    instance_id: str
    table: pa.Table | None  # None: no client turns
    content: bytes
    markers: tuple[tuple[tuple[str, int], Marker | None], ...]


def _build_one(
    item: tuple[Trajectory, int],
    counter: TokenCounter | None,
    markers: MarkerCheck | None,
    opts: BuildOptions,
    *,
    own_markers: bool = False,
) -> _Built:
    """`own_markers`: `markers` is this instance's alone, so its choices travel with the result."""
    traj, repeat = item
    rows = instance_rows(traj, repeat, opts, counter, markers)
    choices = tuple(markers.chosen.items()) if own_markers and markers is not None else ()
    if not rows:
        return _Built(traj.id, repeat, "", None, b"", choices)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    return _Built(traj.id, repeat, rows[0]["instance_id"], table, b"".join(map(content_line, rows)), choices)


def _build_worker(
    w: int, jobs: int, sources: list[str], opts: BuildOptions, counter: TokenCounter | None, out: Any
) -> None:
    """A `--jobs` worker: reads the sources itself (no trajectory crosses a pipe) and builds
    every `jobs`-th instance from the `w`-th, with a marker check of its own per instance (the
    parent adopts the choices, which depend only on the message and the template)."""
    try:
        k = 0
        for repeat in range(1, opts.repeats + 1):
            for traj in read_sources(sources, opts.format):
                if k % jobs == w:
                    markers = MarkerCheck(counter) if opts.history_marker else None
                    out.put(("ok", _build_one((traj, repeat), counter, markers, opts, own_markers=True)))
                k += 1
        out.put(("end", None))
    except BaseException as exc:  # the parent says what happened (see _built_by_workers)
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def _built_by_workers(
    sources: Sequence[str], opts: BuildOptions, counter: TokenCounter | None, jobs: int
) -> Iterator[_Built]:
    """The instances in source order, built round-robin by `jobs` spawned processes, each with a
    short queue (memory follows the largest trajectory). A worker that fails stops the others;
    a fault in the sources is then raised by reading them here, exactly as `--jobs 1` raises it."""
    ctx = mp.get_context("spawn")
    queues = [ctx.Queue(maxsize=4) for _ in range(jobs)]
    procs = [
        ctx.Process(target=_build_worker, args=(w, jobs, list(sources), opts, counter, queues[w]), daemon=True)
        for w in range(jobs)
    ]
    for proc in procs:
        proc.start()
    try:
        k = 0
        while True:
            kind, value = _next(queues[k % jobs], procs[k % jobs])
            if kind == "end":
                return
            if kind == "error":
                for proc in procs:
                    proc.kill()
                for _ in read_sources(sources, opts.format):  # a fault in the sources: its own error
                    pass
                raise TraceError(f"a --jobs worker failed: {value}")
            yield value
            k += 1
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()
        for q in queues:
            q.close()
            q.cancel_join_thread()


def _next(q: Any, proc: Any) -> tuple[str, Any]:
    while True:
        try:
            item: tuple[str, Any] = q.get(timeout=1.0)
            return item
        except queue.Empty:
            if not proc.is_alive():
                try:
                    item = q.get(timeout=1.0)  # its last words may still be in the pipe
                    return item
                except queue.Empty:
                    return "error", f"the process exited with code {proc.exitcode} without a result"


class _ShardWriter:
    """Writes instance row groups into numbered shard files inside the temporary folder."""

    def __init__(self, folder: Path, name: str, rows_per_shard: int) -> None:
        self.folder = folder
        self.name = name
        self.rows_per_shard = rows_per_shard
        self.files: list[Path] = []
        self.rows: list[int] = []
        self.groups = 0
        self._writer: pq.ParquetWriter | None = None

    def add(self, rows: list[dict[str, Any]]) -> tuple[int, int]:
        return self.add_table(pa.Table.from_pylist(rows, schema=SCHEMA))

    def add_table(self, table: pa.Table) -> tuple[int, int]:
        """One instance's rows as one row group; (shard, group) it went to."""
        if self._writer is None or self.rows[-1] >= self.rows_per_shard:
            self._roll()
        assert self._writer is not None
        n = table.num_rows
        self._writer.write_table(table, row_group_size=n + 1)
        self.rows[-1] += n
        self.groups += 1
        return len(self.files) - 1, self.groups - 1

    def _roll(self) -> None:
        self.close()
        path = self.folder / f"part-{len(self.files):05d}.parquet"
        # zstd's default level: level 9 made shards ~10 % smaller but cost ~20 % of a build's
        # time (fixture x30 without a tokenizer: 4.6 s -> 3.6 s, tests/bench/bench_build.py)
        self._writer = pq.ParquetWriter(
            path, SCHEMA, compression="zstd", compression_level=3, write_statistics=False, store_schema=False
        )
        self.files.append(path)
        self.rows.append(0)
        self.groups = 0

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def finish(self) -> list[ShardFile]:
        """Rename parts to their final names (`layout.shard_file`); return the manifest's shard list."""
        self.close()
        total = len(self.files)
        shards = []
        for k, (path, rows) in enumerate(zip(self.files, self.rows, strict=True)):
            final = self.folder / shard_file(self.name, k, total)
            path.rename(final)
            shards.append(ShardFile(final.name, rows, final.stat().st_size, sha256_file(final)))
        return shards


def build_shards(
    sources: Sequence[str],
    out: str | os.PathLike[str],
    opts: BuildOptions,
    *,
    counter: TokenCounter | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    jobs: int = 1,
) -> BuildResult:
    """Build shards for `sources` (files, folders, `hf:org/name`: `traces.inputs.resolve`) into `out`;
    nothing is left at `out` if anything fails.

    `overwrite` replaces an existing `out` only if it is a shard folder (or empty) holding none
    of the sources (`outdir.check_replaceable`). `progress` counts the client turns built; their
    total is counted first when a `counter` makes the build slow, else known once the first pass
    over the sources has ended (with `repeats` > 1). `jobs`
    processes build the trajectories' rows (`traces.parallel`): the same bytes as one."""
    opts.check()
    check_jobs(jobs)
    out_path = Path(out)
    if not sources:
        raise TraceError("no source files given")
    files = expand_inputs(sources)  # folders and hf: ids become files (traces.inputs.resolve)
    if out_path.exists() or out_path.is_symlink():
        if not overwrite:
            raise TraceError(f"{out_path}: already exists; choose another --out or pass --overwrite")
        check_replaceable(out_path, [*files, *(s for s in sources if not str(s).startswith(HUB_PREFIX))])
    sweep_stale(out_path)
    tmp = temp_sibling(out_path, "building")
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
    except OSError as exc:  # a read-only file system, /proc, no permission
        raise unwritable(out_path, exc) from None
    try:
        manifest = _build_into(tmp, sources, files, opts, counter, progress, jobs)
        manifest.write(tmp)
        replace_dir(tmp, out_path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return BuildResult(out_path, manifest)


def _build_into(
    tmp: Path,
    sources: Sequence[str],
    files: Sequence[str],
    opts: BuildOptions,
    counter: TokenCounter | None,
    progress: Progress | None,
    jobs: int = 1,
) -> Manifest:
    writer = _ShardWriter(tmp, opts.name, opts.rows_per_shard)
    markers = MarkerCheck(counter) if opts.history_marker else None
    content = hashlib.sha256()
    instances: list[InstanceEntry] = []
    n_turns = n_traj = 0
    total_known = False
    if progress is not None and counter is not None:
        # Counting tokens makes the build the slowest step of the pipeline (minutes for the
        # official set): a quick first pass counts the client turns, so the line shows a total
        # and an ETA. It reads and validates the sources as the build does, so a bad source
        # fails here, with the same errors, before any token is counted.
        label = progress.label
        progress.stage(f"{label}: counting turns")
        counted = 0
        for traj in read_sources(sources, opts.format):
            counted += len(traj.client_indices())
            progress.advance(len(traj.client_indices()))
        progress.stage(label, total=counted * opts.repeats)
        total_known = True
    if jobs == 1:
        built: Iterator[_Built] = (
            _build_one((traj, repeat), counter, markers, opts)
            for repeat in range(1, opts.repeats + 1)
            for traj in read_sources(sources, opts.format)
        )
    else:
        built = _built_by_workers(sources, opts, counter, jobs)
    try:
        for b in built:
            n_traj += b.repeat == 1
            if progress is not None and b.repeat == 2 and not total_known:
                total_known = True  # every instance of the first pass has been counted
                progress.set_total(n_turns * opts.repeats)
            if markers is not None:
                for key, marker in b.markers:
                    markers.adopt(key, marker)
            if b.table is None:
                continue
            content.update(b.content)
            shard, group = writer.add_table(b.table)
            instances.append(InstanceEntry(b.instance_id, b.trajectory_id, b.repeat, shard, group))
            n_turns += b.table.num_rows
            if progress is not None:
                progress.advance(b.table.num_rows)
        shards = writer.finish()
    finally:
        writer.close()
    if not instances:
        raise TraceError("the sources hold no client turns; nothing to build")
    if markers is not None:
        markers.verify()
    return Manifest(
        format_version=FORMAT_VERSION,
        name=opts.name,
        generated_by=f"trajbench {__version__}",
        options=BuildRecord(opts.format, opts.salt, opts.seed, opts.repeats, opts.history_marker, opts.name),
        tokenizer=TokenizerInfo(counter.name, counter.fingerprint) if counter else None,
        sources=[SourceFile(Path(f).name, sha256_file(Path(f))) for f in files],
        counts=Counts(n_traj, len(instances), n_turns),
        history_marker=markers.summary() if markers is not None else None,
        content_hash=content.hexdigest(),
        shards=shards,
        instances=instances,
    )
