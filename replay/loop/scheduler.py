"""The closed loop of one worker: its slots, each replaying trajectory instances turn by turn (docs/closed-loop.md).

A slot asks its `Source` (the coordinator, in-process or across a pipe) for the next FIFO ordinal,
rebuilds that instance's prompts from the shards (re-salted for cycles past the stored repeats),
waits out each turn's recorded delay while holding the slot, sends the turn, waits for the whole
answer and only then moves on, so a slot never has two requests in flight. A failed turn ends
its instance: the rest of its turns are recorded as "aborted" without being sent, and the slot
takes the next instance; a partial turn (the response started but broke, or carried an error
object or a malformed line) goes on, as the reference client goes on (docs/closed-loop.md). Every
turn becomes one `Record`, handed to `Source.emit` as it finishes.

Client-side token counting (`--tokenizer`) is off the turn's critical path: the slot moves on (its
next turn, or the FIFO, with the time its last byte was read) as soon as the answer is in, while a
counting thread counts it; the record is emitted when the count is done, after the slot's earlier
records, so the records are complete and each slot's stay in turn order (docs/closed-loop.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import traces
from traces import Instance, Shards, TurnPrompt

from ..client import DEFAULT_LIMITS, ResponseLimits, frozen_heap
from ..results import PARTIAL_KINDS, Record

if TYPE_CHECKING:
    from ..client import StreamResult


class Source(Protocol):
    """What a worker's slots need from the coordinator."""

    stop_event: asyncio.Event  # set when issuing must stop (window end with stop, or Ctrl-C)

    async def next_instance(self, slot: int, finished: bool, t_done_ns: int | None = None) -> int | None:
        """The next FIFO ordinal; `t_done_ns`: when the slot's finished instance read its last
        byte (the window closes then, not when counting or this call happened)."""
        ...

    def emit(self, record: Record) -> None: ...


class ChatClient(Protocol):
    async def stream_chat(self, body: bytes, headers: dict[str, str], *, timeout_s: float) -> StreamResult:
        """POST `body` (the request's JSON, encoded) and fold the answer."""
        ...


class AnswerCounter(Protocol):
    """The part of a traces tokenizer the scheduler uses (client-side output tokens)."""

    def output_tokens(self, message: dict[str, Any], *, structured: bool | None = None) -> int | None: ...


@dataclass(frozen=True)
class WorkerPlan:
    """One worker's share of a run: picklable, so a process (or a remote) backend can ship it."""

    worker: int
    slots: tuple[int, ...]
    shards: str
    profile: str | traces.Profile  # a name, or the profile itself (a user profile reaches a spawned worker)
    base_url: str
    model: str | None = None
    inject_delays: bool = True
    turn_timeout: float = 14_400.0  # the run passes its own (the profile's, or --turn-timeout)
    headers: tuple[str, ...] = ("X-Session-ID",)
    tokenizer: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_completion_tokens: int | None = None  # RunConfig's override of the profile's cap (not official)
    limits: ResponseLimits = DEFAULT_LIMITS
    reuse_connections: bool = True  # False when the preflight saw the server close sockets after answers
    replica_header: str | None = None  # a response header whose value each record keeps
    max_idle_s: float = 4.0  # a kept-alive socket idle longer is not reused (the profile's, docs/closed-loop.md)
    instances: int | None = None  # trajectory instances the run starts (None: unknown); the first wave reads no more


@dataclass(frozen=True)
class _Run:
    """One instance as a slot replays it: who, which repeat, which headers and salts."""

    slot: int
    logical: str
    repeat: int
    headers: dict[str, str]
    salt_repeat: str
    salt_conversation: str
    bodies: traces.BodyEncoder  # the instance's request bodies, each message encoded once


@dataclass(frozen=True)
class InstanceRef:
    """FIFO ordinal → shard instance, cycle and the repeat/logical id it is replayed as."""

    ordinal: int
    shard_index: int
    cycle: int


def resolve(ordinal: int, num_shard_instances: int) -> InstanceRef:
    """docs/closed-loop.md FIFO: ordinal i replays shard instance i mod M in cycle i // M."""
    return InstanceRef(ordinal, ordinal % num_shard_instances, ordinal // num_shard_instances)


def max_stored_repeat(shards: Shards) -> int:
    return max(entry.repeat for entry in shards.index)


def instance_prompts(shards: Shards, instance: Instance, cycle: int) -> tuple[int, str, traces.Salt | None]:
    """(repeat, logical id, salt override) of an instance replayed in `cycle`."""
    if cycle == 0:
        return instance.repeat, instance.instance_id, None
    repeat = instance.repeat + cycle * max_stored_repeat(shards)
    return (
        repeat,
        traces.logical_id(instance.trajectory_id, repeat),
        traces.salt_for(shards, instance.trajectory_id, repeat),
    )


def session_headers(names: tuple[str, ...], logical: str) -> dict[str, str]:
    """docs/requests.md: every named header carries the instance's logical id."""
    return {name: logical for name in names}


class Scheduler:
    """Runs a worker's slots until the source has nothing left or issuing stops."""

    def __init__(
        self,
        plan: WorkerPlan,
        source: Source,
        client: ChatClient,
        *,
        shards: Shards | None = None,
        counter: AnswerCounter | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.plan = plan
        self.source = source
        self.client = client
        self.shards = shards if shards is not None else Shards(plan.shards)
        self.counter = counter
        self.profile = traces.get_profile(plan.profile) if isinstance(plan.profile, str) else plan.profile
        self.active = 0  # requests in flight (live display)
        self.waiting = 0  # slots waiting out a recorded delay (live display)
        self._clock = clock
        self._tasks: list[asyncio.Task[None]] = []
        # Shards are read off the event loop so one large instance does not stall the other
        # slots' streams (and their timestamps); one thread because ParquetFile is not shared-safe.
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shards-w{plan.worker}")
        # Counting answers (`--tokenizer`) takes milliseconds: a thread of its own, so neither the
        # loop (the other slots' chunk timestamps) nor a slot (its next turn) waits for it.
        self._counting = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"count-w{plan.worker}")
        self._ready: dict[int, Instance] = {}  # the first wave's instances, read before it starts
        self._first_wave_read = False
        self._last_emit: dict[int, asyncio.Task[None]] = {}  # slot → its latest deferred emit
        self._deferred: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Run every slot to its end. A slot that raises (a bug, unreadable shards) stops the
        worker: the other slots are cancelled (their turns in flight recorded) and it re-raises."""
        try:
            await self.read_first_wave()
            with frozen_heap():
                await self._run_slots()
        finally:
            self._reader.shutdown(wait=False)
            self._counting.shutdown(wait=False)

    async def read_first_wave(self) -> None:
        """Read the instances the slots start with, before the first request (once). Read as the
        slots asked, the whole first wave's reading (a thread holding the interpreter in turns
        with the loop) overlapped the first answers and delayed their reads. A backend calls it
        before it opens its connections, so none idles past the pool's max idle meanwhile."""
        if not self._first_wave_read:
            self._first_wave_read = True
            await asyncio.get_running_loop().run_in_executor(self._reader, self._read_first_wave)

    def _read_first_wave(self) -> None:
        """The FIFO hands slot s ordinal s in the first wave (in-process; across workers, about
        so), and no ordinal past the run's instances; an instance read here is kept for the run
        (no more of them than slots)."""
        for slot in self.plan.slots:
            if self.plan.instances is not None and slot >= self.plan.instances:
                break
            k = resolve(slot, len(self.shards)).shard_index
            if k not in self._ready:
                self._ready[k] = self.shards.instance(k)

    async def _run_slots(self) -> None:
        self._tasks = [asyncio.create_task(self._slot(s), name=f"slot-{s}") for s in self.plan.slots]
        try:
            done, pending = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_EXCEPTION)
        except asyncio.CancelledError:  # our caller is going away: take the slots with us
            self.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._flush(quiet=True)
            raise
        failed = [t for t in done if not t.cancelled() and t.exception() is not None]
        if failed:
            self.source.stop_event.set()
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self._flush(quiet=True)
            raise failed[0].exception()  # type: ignore[misc]
        await self._flush(quiet=False)

    async def _flush(self, *, quiet: bool) -> None:
        """Wait for every deferred record (its count), so none is lost when the worker ends;
        `quiet`: a counting failure is not raised (another error is already on its way)."""
        while self._deferred:
            results = await asyncio.gather(*list(self._deferred), return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException) and not quiet and not isinstance(r, asyncio.CancelledError):
                    raise r

    def _emit(self, slot: int, record: Record, counted: StreamResult | None = None) -> None:
        """Hand a record to the source, after the slot's deferred ones; with `counted`, once the
        answer's client-side tokens are counted (on the counting thread, off the slot's path)."""
        before = self._last_emit.get(slot)
        if counted is None and (before is None or before.done()):
            self.source.emit(record)
            return
        task = asyncio.create_task(self._emit_later(before, record, counted), name=f"emit-{slot}")
        self._last_emit[slot] = task
        self._deferred.add(task)
        task.add_done_callback(self._deferred.discard)

    async def _emit_later(
        self, before: asyncio.Task[None] | None, record: Record, counted: StreamResult | None
    ) -> None:
        if counted is not None:
            tokens = await asyncio.get_running_loop().run_in_executor(self._counting, self._client_tokens, counted)
            record = replace(record, client_output_tokens=tokens[0], client_tokens_after_first=tokens[1])
        if before is not None:
            await asyncio.wait([before])  # the slot's earlier record first (whatever became of it)
        self.source.emit(record)

    def cancel(self) -> None:
        """Cancel every slot now; a turn in flight is recorded as "cancelled"."""
        for t in self._tasks:
            t.cancel()

    async def _slot(self, slot: int) -> None:
        finished = False
        t_done: int | None = None
        while not self.source.stop_event.is_set():
            ordinal = await self.source.next_instance(slot, finished, t_done)
            if ordinal is None:
                return
            t_done = await self._run_instance(slot, resolve(ordinal, len(self.shards)))
            finished = True

    async def _run_instance(self, slot: int, ref: InstanceRef) -> int:
        """Replay one instance; returns when it finished: the time its last answer's last byte
        was read (or now, when it ended otherwise)."""
        instance = self._ready.get(ref.shard_index)
        if instance is None:
            instance = await asyncio.get_running_loop().run_in_executor(
                self._reader, self.shards.instance, ref.shard_index
            )
        run, prompts = self._prepare(slot, ref, instance)
        t_done: int | None = None
        for prompt in prompts:
            delay = prompt.row.delay_seconds if self.plan.inject_delays else 0.0
            if delay > 0 and not await self._wait_delay(delay):
                return self._clock()  # issuing stopped during the delay: the turn is never sent
            await asyncio.sleep(0)  # the prompt is built: the other streams' reads, then the send
            if self.source.stop_event.is_set():
                return self._clock()
            record, result = await self._send(run, prompt, delay)
            t_done = record.t_last_ns
            counted = self.counter is not None and (result.error_kind is None or result.error_kind in PARTIAL_KINDS)
            self._emit(slot, record, result if counted else None)
            if record.failed:
                self._abort_rest(run, list(prompts), record)
                return self._clock()
            # A turn's end is a few hundred µs of work (its record written, the next prompt built
            # and encoded, the request written); done at one go it delayed every read queued
            # meanwhile, which the timing error of the other streams measured. Split by yields,
            # the reads waiting between the parts are taken (and stamped) first.
            await asyncio.sleep(0)
        return t_done if t_done is not None else self._clock()

    def _prepare(self, slot: int, ref: InstanceRef, instance: Instance) -> tuple[_Run, Iterator[TurnPrompt]]:
        """The instance's run facts and its prompts, rebuilt one turn at a time as they are sent:
        rebuilding a whole instance at once held the loop for milliseconds (every slot's chunk
        timestamps with it), 128 times over in a run's first wave."""
        repeat, logical, salt = instance_prompts(self.shards, instance, ref.cycle)
        first = instance.turns[0]
        run = _Run(
            slot,
            logical,
            repeat,
            session_headers(self.plan.headers, logical),
            salt.repeat if salt else first.salt_repeat,
            salt.conversation if salt else first.salt_conversation,
            traces.BodyEncoder(
                self.profile, model=self.plan.model, max_completion_tokens=self.plan.max_completion_tokens
            ),
        )
        return run, traces.iter_prompts(instance, salt=salt)

    def logical_of(self, ordinal: int) -> str:
        """The logical instance id a FIFO ordinal is replayed as (what its records carry)."""
        ref = resolve(ordinal, len(self.shards))
        return instance_prompts(self.shards, self.shards.instance(ref.shard_index), ref.cycle)[1]

    def lost_turns(
        self,
        slot: int,
        ordinal: int,
        recorded: set[int],
        t_ns: int,
        why: str,
        *,
        abort_rest: bool,
        known_ns: int | None = None,
    ) -> list[Record]:
        """The records of an instance whose worker died (docs/ray.md), built where the coordinator
        is. A turn without a record may have been sent and answered, its record lost with the
        worker's unsent batch: its fate is unknown, so it fails as `worker-lost`, never as "not
        sent". Only a turn that provably was not sent is aborted (by the failure rule), or left
        out when issuing had stopped (`abort_rest` False): one whose recorded delays, counted from
        `known_ns` (the last moment the driver knows of: the instance's latest record, or its
        assignment), would end after `t_ns`, when the worker was found lost. `recorded`: the turn
        numbers whose records did arrive."""
        ref = resolve(ordinal, len(self.shards))
        run, prompts = self._prepare(slot, ref, self.shards.instance(ref.shard_index))
        rest = [p for p in prompts if p.row.turn not in recorded]
        out: list[Record] = []
        waited_ns = 0
        for p in rest:
            waited_ns += int(p.row.delay_seconds * 1e9) if self.plan.inject_delays else 0
            if known_ns is None or known_ns + waited_ns <= t_ns:
                unknown = why if not out else f"{why}; its fate is unknown: it may have been sent and answered"
                out.append(self._record(run, p, 0.0, t_send_ns=t_ns, error=("worker-lost", unknown)))
                continue
            if abort_rest:
                reason = (
                    f"not sent: worker lost ({why}) before this turn's recorded delay ended"
                    if not out
                    else f"not sent: turn {out[-1].turn} of {run.logical} failed (worker-lost)"
                )
                out += [self._record(run, q, 0.0, t_send_ns=t_ns, error=("aborted", reason)) for q in rest[len(out) :]]
            break
        return out

    async def _wait_delay(self, delay: float) -> bool:
        """Hold the slot for `delay` s; False when issuing stopped meanwhile."""
        self.waiting += 1
        try:
            await asyncio.wait_for(self.source.stop_event.wait(), delay)
            return False
        except TimeoutError:
            return True
        finally:
            self.waiting -= 1

    async def _send(self, run: _Run, prompt: TurnPrompt, delay: float) -> tuple[Record, StreamResult]:
        """Send one turn; its record (client tokens not yet counted) and the stream's result."""
        body = run.bodies.encode(prompt.messages, prompt.tools)
        t_call = self._clock()
        self.active += 1
        try:
            result = await self.client.stream_chat(body, dict(run.headers), timeout_s=self.plan.turn_timeout)
        except asyncio.CancelledError:
            self._emit(
                run.slot,
                self._record(
                    run,
                    prompt,
                    delay,
                    t_send_ns=t_call,
                    error=("cancelled", "cancelled while in flight (run interrupted)"),
                ),
            )
            raise
        finally:
            self.active -= 1
        return self._record(run, prompt, delay, result=result), result

    def _abort_rest(self, run: _Run, rest: list[TurnPrompt], failed: Record) -> None:
        """docs/closed-loop.md: later prompts assume the recorded history, so the instance ends here; its
        unsent turns are recorded as aborted so accuracy and failure counts see them."""
        why = f"not sent: turn {failed.turn} of {run.logical} failed ({failed.error_kind})"
        t = failed.t_last_ns if failed.t_last_ns is not None else failed.t_send_ns
        for prompt in rest:
            self._emit(run.slot, self._record(run, prompt, 0.0, t_send_ns=t, error=("aborted", why)))

    def _record(
        self,
        run: _Run,
        prompt: TurnPrompt,
        delay: float,
        *,
        result: StreamResult | None = None,
        t_send_ns: int = 0,
        error: tuple[str, str] | None = None,
        client_tokens: tuple[int | None, int | None] = (None, None),
    ) -> Record:
        row = prompt.row
        common: dict[str, Any] = dict(
            instance_id=run.logical,
            trajectory_id=row.trajectory_id,
            repeat=run.repeat,
            turn=row.turn,
            client_turn_index=row.client_turn_index,
            slot=run.slot,
            worker=self.plan.worker,
            prompt_sha256=prompt.sha256,
            salt_repeat=run.salt_repeat,
            salt_conversation=run.salt_conversation,
            delay_s=delay,
            in_window=True,  # provisional: the coordinator stamps the real flag
            client_prompt_tokens=row.isl_tokens,
        )
        if result is None:
            kind, message = error or ("cancelled", "")
            return self._redacted(
                Record(
                    **common,
                    t_send_ns=t_send_ns,
                    t_first_ns=None,
                    t_last_ns=None,
                    chunk_ns=(),
                    content="",
                    reasoning="",
                    tool_calls=(),
                    finish_reason=None,
                    prompt_tokens=None,
                    completion_tokens=None,
                    cached_tokens=None,
                    client_output_tokens=None,
                    http_status=None,
                    error_kind=kind,
                    error_message=message,
                )
            )
        usage = result.usage or {}
        details = usage.get("prompt_tokens_details") or {}
        return self._redacted(
            Record(
                **common,
                t_send_ns=result.t_send_ns,
                t_first_ns=result.t_first_ns,
                t_last_ns=result.t_last_ns,
                chunk_ns=tuple(result.chunk_ns),
                content=result.content,
                reasoning=result.reasoning,
                tool_calls=tuple(result.tool_calls),
                finish_reason=result.finish_reason,
                prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
                completion_tokens=_int_or_none(usage.get("completion_tokens")),
                cached_tokens=_int_or_none(details.get("cached_tokens") if isinstance(details, dict) else None),
                client_output_tokens=client_tokens[0],
                http_status=result.http_status,
                error_kind=result.error_kind,
                error_message=result.error_message,
                first_chunk_chars=result.first_chars,
                client_tokens_after_first=client_tokens[1],
                replica=result.header_value,
                dropped_reasoning_chars=result.dropped_reasoning_chars,
            )
        )

    def _redacted(self, record: Record) -> Record:
        """The record with the API key cut out of everything the server sent back: a server (or a
        proxy) that echoes the key in an error, the answer or a header must not put it in a file."""
        key = self.plan.api_key
        return redact(record, key) if key else record

    def _client_tokens(self, result: StreamResult) -> tuple[int | None, int | None]:
        """The answer's output tokens and those after its first chunk, counted as the reference
        counts them (docs/metrics.md): an answer with reasoning or tool calls is counted through
        the chat template, in both parts."""
        assert self.counter is not None
        whole = {
            "content": result.content,
            "reasoning_content": result.reasoning,
            "tool_calls": list(result.tool_calls),
        }
        content, reasoning, calls = result.after_first
        structured = bool(result.reasoning or result.tool_calls)
        tail = {"content": content, "reasoning_content": reasoning, "tool_calls": list(calls)}
        return self.counter.output_tokens(whole), self.counter.output_tokens(tail, structured=structured)


#: What stands where a server echoed the API key.
REDACTED = "[redacted]"


def redact(record: Record, secret: str) -> Record:
    """`record` with every occurrence of `secret` in its server-sent text replaced by `REDACTED`."""
    changes: dict[str, Any] = {}
    for name in ("content", "reasoning", "error_message", "replica"):
        value = getattr(record, name)
        if isinstance(value, str) and secret in value:
            changes[name] = value.replace(secret, REDACTED)
    if record.tool_calls:
        text = json.dumps(list(record.tool_calls), ensure_ascii=False)
        if secret in text or json.dumps(secret)[1:-1] in text:
            cleaned = text.replace(json.dumps(secret)[1:-1], REDACTED).replace(secret, REDACTED)
            changes["tool_calls"] = tuple(json.loads(cleaned))
    return replace(record, **changes) if changes else record


def _int_or_none(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
