"""Parse an OpenAI chat-completions SSE stream into the facts of one turn (a pure state machine).

Two layers, no I/O, no clock: `SSEParser` turns raw bytes (split anywhere, even inside a line)
into events — `("chunk", dict)`, `("done", None)`, `("error", dict)`, `("malformed", str)`,
`("too_large", str)` — and `ChatStream` folds those events into content, reasoning, tool calls
merged by index, usage and finish reason, stamping each delta-carrying chunk with the arrival
time its caller passes in. The client's hot path feeds socket reads to the same classes, so
there is one implementation.

The parser's rules: blank lines, `:` comments and `event:`/`id:`/`retry:` fields are skipped;
`data: [DONE]` ends the stream; an object with a non-null `error` (or `"object": "error"`) is a
server error sent under HTTP 200; a `data:` payload that is not a JSON object, or a line that is
not an SSE field at all, is malformed. A JSON payload split over several `data:` lines of one
event is joined with newlines, as the SSE standard says. One line, or one event's joined data,
longer than `max_event_bytes` (default 8 MiB) ends the stream as `too_large`: an unending line
would otherwise grow the buffer until memory runs out.

The fold's rules are the reference client's (docs/closed-loop.md, docs/metrics.md), so its keys
mean what they mean there: an error object or a malformed line is noted (the turn is `partial`)
and skipped, and the stream goes on to its end, as the reference reads it; a chunk of a shape
the reference's typed decoder rejects (`choices` not a list, a `delta` that is not an object, a
text that is not a string, …) is skipped the same way, never raised; a delta carrying both
content and reasoning keeps the content and drops that delta's reasoning (counted in
`dropped_reasoning_chars`); a tool-call delta the reference's merge cannot fold (arguments that
are not a string, …) fails the turn (`tool_call`).

Two shortcuts serve what an engine sends when it is paced (one event per socket read) and
change no fact, which tests/replay/client/test_sse.py proves against the rules above (the
one-event equivalence test, and a property test over any text a learned frame may enclose):
`_one_event` (a read that is exactly one `data: {…}` event: one parse, no line split; it is also
where the frame is learned) and `_framed_text` (a read that is this stream's learned
content-chunk line with another text: only the text is parsed). tests/bench/bench_fold.py
measures each (with it, without `_framed_text`, by the rules alone): on one content chunk per
read `_framed_text` takes the fold from about 4 µs to under 2 µs a chunk. Reads of several
events (a saturated client) take the rules: a shortcut for them did not pay on the paced
workload (tests/bench/bench_paced.py) and needed its own proofs.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from typing import Any

import orjson

from .caps import ResponseLimits, format_size

CHUNK, DONE, ERROR, MALFORMED, TOO_LARGE = "chunk", "done", "error", "malformed", "too_large"
#: The fold's fault kinds (see `replay.results.records` for what each means to a turn).
TOOL_CALL, UNTERMINATED, EMPTY = "tool_call", "unterminated", "empty"

#: One SSE line or event at most, unless the caller says otherwise (a run sets it from its
#: `ResponseLimits`, where the default is reasoned).
MAX_EVENT_BYTES = ResponseLimits.max_event_bytes

Event = tuple[str, Any]
Emit = Callable[[str, Any], None]

_SKIPPED_FIELDS = (b"event", b"id", b"retry")
_CONTENT_KEY = re.compile(rb'"content"\s*:\s*"')  # where a content chunk's text starts (ChatStream._learn)
#: the types of a delta's fields the reference decodes (each may also be null; other fields are ignored)
_DELTA_TYPES: dict[str, type] = {
    "role": str,
    "content": str,
    "reasoning_content": str,
    "reasoning": str,
    "tool_calls": list,
}


class SSEParser:
    """Incremental: `feed` any byte split, get the complete events; `close` at end of stream."""

    __slots__ = ("_buf", "_pending", "done", "max_event_bytes")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buf = b""
        self._pending: bytes | None = None  # a data payload that is not (yet) valid JSON
        self.done = False
        self.max_event_bytes = max_event_bytes

    @property
    def at_boundary(self) -> bool:
        """Between events: no partial line and no unfinished data waiting (a shortcut of the
        fold may take a read whole only then)."""
        return not self._buf and self._pending is None

    def feed(self, data: bytes, emit: Emit | None = None) -> list[Event]:
        """The complete events of `data` (with what came before): returned as a list, or, with
        `emit`, handed to it one by one as each is parsed (the fold's way: a read's parsed
        chunks are never all alive at once, which costs several times the parse on a long read)."""
        events: list[Event] = []
        if emit is None:
            emit = _collector(events)
        if self.done:
            return events
        if self._buf:
            data = self._buf + data
        lines = data.split(b"\n")
        self._buf = lines.pop()  # the unterminated tail waits for the next read
        if len(data) > self.max_event_bytes and self.oversized(lines, emit):
            return events
        line_of = self._line
        for line in lines:
            if not line and self._pending is None:
                continue  # the blank line after an event: nothing to do (half the lines of a stream)
            if line_of(line, emit):
                break
        return events

    def close(self, emit: Emit | None = None) -> list[Event]:
        """End of input: a final line without newline still counts; a half JSON is malformed."""
        events: list[Event] = []
        if emit is None:
            emit = _collector(events)
        if not self.done:
            tail, self._buf = self._buf, b""
            if not (tail and self._line(tail, emit)) and self._pending is not None:
                emit(MALFORMED, _show(self._pending))
                self._pending = None
        return events

    def oversized(self, lines: list[bytes], emit: Emit) -> bool:
        """After a read longer than the cap: does a line (or the unterminated tail) exceed it?
        Then the stream ends with a `too_large` event. Only called for such reads, so the usual
        read pays one length comparison."""
        cap = self.max_event_bytes
        if len(self._buf) > cap or any(len(line) > cap for line in lines):
            self._buf = b""
            emit(TOO_LARGE, f"an SSE line is longer than {format_size(cap)} (raise the cap with --max-event-mb)")
            self.done = True
            return True
        return False

    def _line(self, line: bytes, emit: Emit) -> bool:
        """Handle one line; True once the stream has ended ([DONE] or too large)."""
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.startswith(b"data:"):
            payload = line[6:] if line[5:6] == b" " else line[5:]
            if self._pending is not None:
                payload = self._pending + b"\n" + payload
            elif payload == b"[DONE]":
                emit(DONE, None)
                self.done = True
                return True
            try:
                obj = orjson.loads(payload)
            except orjson.JSONDecodeError:
                if len(payload) > self.max_event_bytes:
                    self._pending = None
                    emit(
                        TOO_LARGE,
                        f"an SSE event is longer than {format_size(self.max_event_bytes)} (raise the cap with --max-event-mb)",
                    )
                    self.done = True
                    return True
                self._pending = payload  # maybe continued on the next data: line of this event
                return False
            self._pending = None
            if type(obj) is not dict:
                emit(MALFORMED, _show(payload))
            elif obj.get("error") is not None or obj.get("object") == "error":
                emit(ERROR, obj)
            else:
                emit(CHUNK, obj)
            return False
        if not line:  # blank line: end of an event
            if self._pending is not None:
                emit(MALFORMED, _show(self._pending))
                self._pending = None
            return False
        if line.startswith(b":"):
            return False
        name = line.split(b":", 1)[0] if b":" in line else None
        if name in _SKIPPED_FIELDS or (name is not None and name.isalnum()):
            return False  # an SSE field we do not use
        emit(MALFORMED, _show(line))
        return False


def _collector(events: list[Event]) -> Emit:
    def emit(kind: str, value: Any) -> None:
        events.append((kind, value))

    return emit


def _show(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return text if len(text) <= 200 else text[:200] + "…"


def error_text(obj: dict[str, Any]) -> str:
    """The human part of a server error object, whichever shape the server used."""
    err = obj.get("error", obj)
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or orjson.dumps(err, default=str).decode()
        code = err.get("code") or err.get("type")
        return f"{msg} ({code})" if code else str(msg)
    return str(err)


class _Shape(Exception):
    """A chunk the reference's typed decoder would reject: skipped, the turn is `malformed`."""


class ChatStream:
    """Folds a chat-completions stream into one turn's facts; `feed` returns True once the
    stream has ended (`[DONE]`, or a line too large to keep reading).

    Text arrives as pieces (`content`, `reasoning`, one per delta); tool calls are assembled as
    the reference client assembles them (`_merge_call`). The first delta that carries text
    or a tool call is "the first chunk" of TTFT and TPOT: its size in characters is kept, and the
    tool calls of the deltas after it (`tail_calls`), so the output after the first chunk (TPOT's
    denominator, docs/metrics.md) can be counted. `error_kind` holds the turn's first fault: a
    failed kind (`too_large`, `tool_call`) outranks a partial one (docs/closed-loop.md).
    """

    __slots__ = (
        "_t_ns",
        "args",
        "calls",
        "chunk_ns",
        "content",
        "done",
        "dropped_reasoning_chars",
        "error_kind",
        "error_message",
        "finish_reason",
        "first_chars",
        "frame",
        "frame_end",
        "frame_tried",
        "parser",
        "reasoning",
        "t_first_ns",
        "t_last_ns",
        "tail_args",
        "tail_calls",
        "tool_deltas",
        "usage",
    )

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self.parser = SSEParser(max_event_bytes)
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[Any, dict[str, Any]] = {}
        self.tail_calls: dict[Any, dict[str, Any]] = {}  # assembled from the tool deltas after the first
        # each call's argument pieces, joined once at the end (not `+=` per delta: quadratic)
        self.args: dict[Any, list[str]] = {}
        self.tail_args: dict[Any, list[str]] = {}
        self.tool_deltas = 0
        self.dropped_reasoning_chars = 0
        #: (prefix, suffix): this stream's content-chunk line around its text, once learned (`_learn`)
        self.frame: tuple[bytes, bytes] = (b"", b"")
        self.frame_end = b""  # the suffix and the blank line: a read of one framed chunk ends so
        self.frame_tried = False  # learned from the first plain content chunk read alone
        self.first_chars: int | None = None  # characters of the first chunk's text and call pieces
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        # each delta-carrying chunk's arrival, unboxed: 8 bytes a chunk while the stream lasts
        # (a list would hold a ~40-byte int object per chunk for every stream in flight)
        self.chunk_ns = array("q")
        self.t_first_ns: int | None = None
        self.t_last_ns: int | None = None
        self._t_ns = 0  # the time of the read being folded
        self.done = False
        self.error_kind: str | None = None
        self.error_message: str | None = None

    def feed(self, data: bytes, t_ns: int) -> bool:
        """Fold one read stamped `t_ns`; True once the stream has ended (see the class)."""
        self.t_last_ns = t_ns
        if self.done:
            return True
        if self.frame_end and self._framed_text(data, t_ns):
            return False
        if data.endswith(b"}\n\n") and self._one_event(data, t_ns):
            return False
        self._t_ns = t_ns
        self.parser.feed(data, self._event)
        return self.done

    def _framed_text(self, data: bytes, t_ns: int) -> bool:
        """Shortcut: a read that is exactly one or more content chunks of this stream's learned
        frame (`_learn`), each with its own text; only the texts are parsed. False (nothing
        changed) when the read is anything else: the rules decide.

        A client that falls behind a paced server finds several chunks in one read; taking them
        the slow way there made it fall further behind. The frame's end holds a line break, which
        no JSON string holds, so splitting the read at it is exact."""
        pre, end = self.frame[0], self.frame_end
        if not (
            data.startswith(pre)
            and data.endswith(end)
            and len(pre) + len(end) < len(data) <= self.parser.max_event_bytes
            and self.parser.at_boundary
        ):
            return False
        body = data[len(pre) - 1 : len(data) - len(end) + 1]  # the text with its quotes
        if 0x0A not in body:  # one chunk (a line break is never inside a JSON string)
            text = _text_of(body)
            if text is None:
                return False
            self.content.append(text)
            self.chunk_ns.append(t_ns)
            return True
        texts = []
        cut = len(pre) - 1
        for part in data.split(end)[:-1]:  # each chunk's line without the frame's end
            text = _text_of(part[cut:] + b'"') if part.startswith(pre) and 0x0A not in part else None
            if text is None:
                return False
            texts.append(text)
        self.content.extend(texts)
        self.chunk_ns.extend([t_ns] * len(texts))
        return True

    def _one_event(self, data: bytes, t_ns: int) -> bool:
        """Shortcut: a read that is exactly `data: {json}` and a blank line, between events:
        one parse, no line split. False (nothing changed) when it is not a plain JSON chunk
        (an error object, two lines, …): the rules decide."""
        if not (
            data.startswith(b"data: {")
            and data.find(b"\n") == len(data) - 2
            and len(data) <= self.parser.max_event_bytes
            and self.parser.at_boundary
        ):
            return False
        try:
            obj = orjson.loads(memoryview(data)[6:])  # no copy; the blank line is JSON whitespace
        except orjson.JSONDecodeError:
            return False
        if type(obj) is not dict or obj.get("error") is not None or obj.get("object") == "error":
            return False
        if not self.frame_tried and (text := _plain_text(obj)) is not None:
            self._learn(data[:-2], obj, text)
        self._t_ns = t_ns
        self._event(CHUNK, obj)
        return True

    def _learn(self, line: bytes, obj: dict[str, Any], text: str) -> None:
        """Learn this stream's content-chunk line from its first one (`line` parsed to `obj`, a
        plain content chunk carrying `text`): every byte but the text's is kept as `frame`.

        Servers send each content chunk with the same bytes around the text (id, model and
        created do not change within a stream), so a later line with that prefix and suffix
        needs only its text parsed. It is exact: the frame is kept only if the line parses to
        the same object whatever string stands between prefix and suffix (probed once here),
        and a later text is accepted only if it is one valid JSON string, so a line the frame
        matches is a chunk of the same shape; anything else takes the full rules.
        """
        self.frame_tried = True
        key = _CONTENT_KEY.search(line)
        end = _string_end(line, key.end()) if key is not None else -1
        if key is None or end < 0:
            return
        pre, suf = line[: key.end()], line[end:]
        try:
            probe = orjson.loads(pre[6:] + b"\\u0001" + suf)
        except orjson.JSONDecodeError:
            return
        if type(probe) is not dict or _plain_text(probe) != "\x01":
            return
        probe["choices"][0]["delta"]["content"] = text
        if probe == obj:
            self.frame = (pre, suf)
            self.frame_end = suf + b"\n\n"

    def close(self, t_ns: int | None = None) -> bool:
        """End of the HTTP body: a stream that never said [DONE] nor gave a finish reason is
        `unterminated` (unless it had a fault already)."""
        self._t_ns = t_ns if t_ns is not None else self.t_last_ns or 0
        self.parser.close(self._event)
        if not self.done and self.finish_reason is None:
            self._fault(
                UNTERMINATED, "the stream ended without [DONE] or a finish_reason (a truncated or unfinished answer)"
            )
        self.done = True
        return True

    def settle(self, *, whole: bool) -> None:
        """After the last read: assemble the tool calls as the reference does (indexes it
        cannot order fail the turn) and, when the stream was read `whole` (no break, no
        timeout), name an answer that carried nothing `empty`."""
        try:
            sorted(self.calls)
        except TypeError:
            self._fault(TOOL_CALL, "tool-call indexes of mixed types cannot be ordered (the reference fails this turn)")
        if (
            whole
            and self.error_kind is None
            and not (self.content or self.reasoning or self.calls or self.finish_reason)
        ):
            self._fault(EMPTY, "the stream carried no output and no finish reason (e.g. only choices: [])")

    def _fault(self, kind: str, message: str) -> None:
        """Note a fault: the first one stays, except that a failed kind replaces a partial one."""
        if self.error_kind is None or (
            kind in (TOO_LARGE, TOOL_CALL) and self.error_kind not in (TOO_LARGE, TOOL_CALL)
        ):
            self.error_kind, self.error_message = kind, message

    def _event(self, kind: str, value: Any) -> None:
        """One event of the parser, folded as it is parsed (stamped with the read's time)."""
        if kind is CHUNK:
            try:
                self._fold(value, self._t_ns)
            except (_Shape, TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
                # _Shape: a checked rule; anything else is a shape no rule foresaw, never a crash
                shown = orjson.dumps(value, default=str)[:200].decode("utf-8", "replace")
                self._fault(MALFORMED, f"a chunk of an unexpected shape ({exc or type(exc).__name__}): {shown}")
        elif kind is DONE:
            self.done = True
        elif kind is ERROR:
            self._fault("error_object", error_text(value))
        elif kind is TOO_LARGE:
            self._fault(TOO_LARGE, value)
            self.done = True
        else:
            self._fault(MALFORMED, f"not an SSE JSON event: {value!r}")

    def _fold(self, obj: dict[str, Any], t_ns: int) -> None:
        """Fold one chunk, whole or not at all: its shape is checked first (`_Shape` for what the
        reference's typed decoder rejects: only the first choice is read, as there)."""
        choices = obj.get("choices")
        delta = finish = None
        if choices:
            if type(choices) is not list:
                raise _Shape("choices is not a list")
            choice = choices[0]
            if type(choice) is not dict:
                raise _Shape("a choice is not an object")
            delta = choice.get("delta")
            finish = choice.get("finish_reason")
            if finish is not None and type(finish) is not str:
                raise _Shape("finish_reason is not a string")
            if delta:
                if type(delta) is not dict:
                    raise _Shape("delta is not an object")
                for key, value in delta.items():
                    if value is not None and type(value) is not _DELTA_TYPES.get(key, type(value)):
                        raise _Shape(f"delta.{key} is not a {_DELTA_TYPES[key].__name__}")
                calls = delta.get("tool_calls")
                if calls:
                    for part in calls:
                        if type(part) is not dict:
                            raise _Shape("delta.tool_calls is not a list of objects")
            elif delta is not None and type(delta) is not dict:
                raise _Shape("delta is not an object")
        elif choices is not None and type(choices) is not list:
            raise _Shape("choices is not a list")
        usage = obj.get("usage")
        if usage is not None:
            if type(usage) is not dict:  # the reference never reads usage: the rest of the chunk counts
                self._fault(MALFORMED, f"a chunk's usage is not an object: {str(usage)[:60]}")
            elif usage:
                self.usage = usage
        if finish:
            self.finish_reason = finish
        if not delta:
            return
        chars = -1  # characters this delta carries; -1: nothing (not a chunk of the answer)
        text = delta.get("content")
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if text:
            self.content.append(text)
            chars = len(text)
            if thought:  # the reference keeps the content of such a delta and drops its reasoning
                self.dropped_reasoning_chars += len(thought)
        elif thought:
            self.reasoning.append(thought)
            chars = len(thought)
        calls = delta.get("tool_calls")
        if calls:
            tail = self.tool_deltas > 0
            n = 0
            for part in calls:
                got = _merge_call(self.calls, self.args, part)
                if isinstance(got, str):
                    self._fault(TOOL_CALL, got)
                    continue
                n += got
                if tail:
                    _merge_call(self.tail_calls, self.tail_args, part)
            self.tool_deltas += 1
            chars = max(chars, 0) + n
        if chars >= 0:
            self.chunk_ns.append(t_ns)
            if self.first_chars is None:
                self.first_chars = chars
            if self.t_first_ns is None:
                self.t_first_ns = t_ns

    def tool_calls(self) -> tuple[dict[str, Any], ...]:
        return _assembled(self.calls, self.args)

    def after_first(self) -> tuple[str, str | None, tuple[dict[str, Any], ...]]:
        """(content, reasoning, tool calls) emitted after the first chunk, as the reference
        splits them: the first reasoning piece when there is reasoning (content then counts
        whole), else the first content piece; tool calls lose their first delta only when the
        answer has no text at all."""
        if self.reasoning:
            reasoning = "".join(self.reasoning[1:]) if len(self.reasoning) > 1 else None
            content = "".join(self.content)
        else:
            reasoning = None
            content = "".join(self.content[1:])
        if self.content or self.reasoning:
            return content, reasoning, _assembled(self.calls, self.args)
        return content, reasoning, _assembled(self.tail_calls, self.tail_args)


def _merge_call(calls: dict[Any, dict[str, Any]], args: dict[Any, list[str]], part: dict[str, Any]) -> int | str:
    """Fold one streamed tool-call delta into `calls` by index, as the reference client does: a
    delta without `index` continues call 0; `id`, `type` and the function name are replaced by the
    latest non-empty piece (a name sent in pieces keeps the last one); arguments are kept as
    pieces in `args` (`_assembled` joins them once). Returns the characters the piece carries,
    or, for a piece the reference's merge fails on, why (nothing of it is folded)."""
    index = part.get("index", 0)
    fn = part.get("function") or {}
    if type(index) in (list, dict):
        return f"a tool-call index is not a number ({orjson.dumps(index).decode()[:60]}); the reference fails this turn"
    if type(fn) is not dict:
        return "a tool call's function is not an object; the reference fails this turn"
    name, piece = fn.get("name"), fn.get("arguments")
    if piece and type(piece) is not str:
        what = type(piece).__name__.replace("dict", "an object").replace("list", "a list")
        return f"tool-call arguments are {what}, not a string; the reference fails this turn"
    call = calls.get(index)
    if call is None:
        call = calls[index] = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        args[index] = []
    # a non-string id, type or name would poison every later use of the call: kept only as text
    if part.get("id") and type(part["id"]) is str:
        call["id"] = part["id"]
    if part.get("type") and type(part["type"]) is str:
        call["type"] = part["type"]
    n = 0
    if type(name) is str:
        n = len(name)
        if name:
            call["function"]["name"] = name
    if type(piece) is str:
        n += len(piece)
        if piece:
            args[index].append(piece)
    return n


def _assembled(calls: dict[Any, dict[str, Any]], args: dict[Any, list[str]]) -> tuple[dict[str, Any], ...]:
    """The calls by index, each with its argument pieces joined (in arrival order when the
    indexes cannot be ordered: such a turn has failed, `ChatStream.settle`)."""
    try:
        order = sorted(calls)
    except TypeError:
        order = list(calls)
    out = []
    for i in order:
        call = calls[i]
        fn = call["function"]
        out.append({**call, "function": {**fn, "arguments": fn["arguments"] + "".join(args[i])}})
    return tuple(out)


def _text_of(quoted: bytes) -> str | None:
    """The non-empty text a framed chunk carries (`quoted`: one JSON string, quotes included)."""
    try:
        text = orjson.loads(quoted)
    except orjson.JSONDecodeError:
        return None
    return text if text and type(text) is str else None


def _plain_text(obj: dict[str, Any]) -> str | None:
    """The text of a chunk whose only effect on the fold is one piece of content (no reasoning,
    tool call, finish reason, usage or error, and a shape `ChatStream._fold` accepts), else None."""
    if obj.get("error") is not None or obj.get("object") == "error" or obj.get("usage") is not None:
        return None
    choices = obj.get("choices")
    if type(choices) is not list or not choices:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("finish_reason") is not None:
        return None
    delta = choice.get("delta")
    if type(delta) is not dict:
        return None
    text = delta.get("content")
    if not text or type(text) is not str:
        return None
    role = delta.get("role")
    if role is not None and type(role) is not str:
        return None
    for key in ("reasoning_content", "reasoning", "tool_calls"):  # absent or null only
        if delta.get(key) is not None:
            return None
    return text


def _string_end(line: bytes, start: int) -> int:
    """Index of the quote closing the JSON string whose text starts at `start` (-1 if none)."""
    k = line.find(b'"', start)
    while k >= 0:
        slashes = 0
        while line[k - 1 - slashes] == 0x5C:  # backslash
            slashes += 1
        if slashes % 2 == 0:
            return k
        k = line.find(b'"', k + 1)
    return -1
