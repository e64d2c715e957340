"""Parse an OpenAI chat-completions SSE stream into the facts of one turn (a pure state machine).

Two layers, no I/O, no clock: `SSEParser` turns raw bytes (split anywhere, even inside a line)
into events — `("chunk", dict)`, `("done", None)`, `("error", dict)`, `("malformed", str)` — and
`ChatStream` folds those events into content, reasoning, tool calls merged by index, usage and
finish reason, stamping each delta-carrying chunk with the arrival time its caller passes in.
`parse_sse` and `parse_stream` are the pure-function fronts used by tests and tools; the client's
hot path feeds socket reads to the same classes, so there is one implementation.

Rules (malformed input is an error, never a guess): blank lines, `:` comments and `event:`/`id:`/`retry:` fields are
skipped; `data: [DONE]` ends the stream; an object with a non-null `error` (or `"object":
"error"`) is a server error sent under HTTP 200; a `data:` payload that is not JSON, or a line
that is not an SSE field at all, is malformed. A JSON payload split over several `data:` lines
of one event is joined with newlines, as the SSE standard says. One line, or one event's joined
data, longer than `max_event_bytes` (default 8 MiB) ends the stream as `too_large`: an unending
line would otherwise grow the buffer until memory runs out.
"""

from __future__ import annotations

import re
from array import array
from itertools import repeat
from typing import Any

import orjson

from .caps import ResponseLimits, format_size

CHUNK, DONE, ERROR, MALFORMED, TOO_LARGE = "chunk", "done", "error", "malformed", "too_large"

#: One SSE line or event at most, unless the caller says otherwise (a run sets it from its
#: `ResponseLimits`, where the default is reasoned).
MAX_EVENT_BYTES = ResponseLimits.max_event_bytes

Event = tuple[str, Any]

_SKIPPED_FIELDS = (b"event", b"id", b"retry")
_CONTENT_KEY = re.compile(rb'"content"\s*:\s*"')  # where a content chunk's text starts (ChatStream._learn)


class SSEParser:
    """Incremental: `feed` any byte split, get the complete events; `close` at end of stream."""

    __slots__ = ("_buf", "_pending", "done", "max_event_bytes")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buf = b""
        self._pending: bytes | None = None  # a data payload that is not (yet) valid JSON
        self.done = False
        self.max_event_bytes = max_event_bytes

    def feed(self, data: bytes) -> list[Event]:
        if self.done:
            return []
        if self._buf:
            data = self._buf + data
        lines = data.split(b"\n")
        self._buf = lines.pop()  # the unterminated tail waits for the next read
        events: list[Event] = []
        if len(data) > self.max_event_bytes and self.oversized(lines, events):
            return events
        append = events.append
        loads = orjson.loads
        for line in lines:
            # Fast path for what servers send nearly always: `data: {json}` and blank lines.
            # Anything else (or any doubt) goes to `_line`, the rules' one full statement.
            if not line:
                if self._pending is None:
                    continue
            elif line[:7] == b"data: {" and self._pending is None and line[-1:] != b"\r":
                try:
                    obj = loads(line[6:])
                except orjson.JSONDecodeError:
                    pass
                else:
                    if obj.get("error") is None and obj.get("object") != "error":
                        append((CHUNK, obj))
                        continue
            if self._line(line, events):
                break
        return events

    def close(self) -> list[Event]:
        """End of input: a final line without newline still counts; a half JSON is malformed."""
        events: list[Event] = []
        if not self.done:
            tail, self._buf = self._buf, b""
            if not (tail and self._line(tail, events)) and self._pending is not None:
                events.append((MALFORMED, _show(self._pending)))
                self._pending = None
        return events

    def oversized(self, lines: list[bytes], events: list[Event]) -> bool:
        """After a read longer than the cap: does a line (or the unterminated tail) exceed it?
        Then the stream ends with a `too_large` event. Only called for such reads, so the usual
        read pays one length comparison."""
        cap = self.max_event_bytes
        if len(self._buf) > cap or any(len(line) > cap for line in lines):
            self._buf = b""
            events.append(
                (TOO_LARGE, f"an SSE line is longer than {format_size(cap)} (raise the cap with --max-event-mb)")
            )
            self.done = True
            return True
        return False

    def _line(self, line: bytes, events: list[Event]) -> bool:
        """Handle one line; True once the stream has ended (DONE, error or malformed)."""
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.startswith(b"data:"):
            payload = line[6:] if line[5:6] == b" " else line[5:]
            if self._pending is not None:
                payload = self._pending + b"\n" + payload
            elif payload == b"[DONE]":
                events.append((DONE, None))
                self.done = True
                return True
            try:
                obj = orjson.loads(payload)
            except orjson.JSONDecodeError:
                if len(payload) > self.max_event_bytes:
                    self._pending = None
                    events.append(
                        (
                            TOO_LARGE,
                            f"an SSE event is longer than {format_size(self.max_event_bytes)} (raise the cap with --max-event-mb)",
                        )
                    )
                    self.done = True
                    return True
                self._pending = payload  # maybe continued on the next data: line of this event
                return False
            self._pending = None
            if type(obj) is dict and (obj.get("error") is not None or obj.get("object") == "error"):
                events.append((ERROR, obj))
                self.done = True
                return True
            if type(obj) is not dict:
                events.append((MALFORMED, _show(payload)))
                self.done = True
                return True
            events.append((CHUNK, obj))
            return False
        if not line:  # blank line: end of an event
            if self._pending is not None:
                events.append((MALFORMED, _show(self._pending)))
                self.done = True
                return True
            return False
        if line.startswith(b":"):
            return False
        name = line.split(b":", 1)[0] if b":" in line else None
        if name in _SKIPPED_FIELDS or (name is not None and name.isalnum()):
            return False  # an SSE field we do not use
        events.append((MALFORMED, _show(line)))
        self.done = True
        return True


def _show(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return text if len(text) <= 200 else text[:200] + "…"


def error_text(obj: dict[str, Any]) -> str:
    """The human part of a server error object, whichever shape the server used."""
    err = obj.get("error", obj)
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or orjson.dumps(err).decode()
        code = err.get("code") or err.get("type")
        return f"{msg} ({code})" if code else str(msg)
    return str(err)


class ChatStream:
    """Folds a chat-completions stream into one turn's facts; `feed` returns True once finished.

    Text arrives as pieces (`content`, `reasoning`, one per delta); tool calls are assembled as
    the reference client assembles them (`_merge_call`). The first delta that carries text
    or a tool call is "the first chunk" of TTFT and TPOT: its size in characters is kept, and the
    tool calls of the deltas after it (`tail_calls`), so the output after the first chunk (TPOT's
    denominator, docs/metrics.md) can be counted.
    """

    __slots__ = (
        "args",
        "calls",
        "chunk_ns",
        "content",
        "done",
        "error_kind",
        "error_message",
        "finish_reason",
        "first_chars",
        "frame",
        "frame_end",
        "frame_join",
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
        self.calls: dict[int, dict[str, Any]] = {}
        self.tail_calls: dict[int, dict[str, Any]] = {}  # assembled from the tool deltas after the first
        # each call's argument pieces, joined once at the end (not `+=` per delta: quadratic)
        self.args: dict[int, list[str]] = {}
        self.tail_args: dict[int, list[str]] = {}
        self.tool_deltas = 0
        #: (prefix, suffix): this stream's content-chunk line around its text, once learned (`_learn`)
        self.frame: tuple[bytes, bytes] = (b"", b"")
        self.frame_end = b""  # the suffix and the blank line: a read of framed chunks ends so
        self.frame_join = b""  # the suffix, the blank line and the prefix: between two framed chunks
        self.frame_tried = False  # learned from the first plain content chunk only
        self.first_chars: int | None = None  # characters of the first chunk's text and call pieces
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        # each delta-carrying chunk's arrival, unboxed: 8 bytes a chunk while the stream lasts
        # (a list would hold a ~40-byte int object per chunk for every stream in flight)
        self.chunk_ns = array("q")
        self.t_first_ns: int | None = None
        self.t_last_ns: int | None = None
        self.done = False
        self.error_kind: str | None = None
        self.error_message: str | None = None

    def feed(self, data: bytes, t_ns: int) -> bool:
        """Fold one read stamped `t_ns`; True once the stream has finished (or failed)."""
        self.t_last_ns = t_ns
        parser = self.parser
        if parser.done:
            return self.done
        pre, tail = self.frame[0], self.frame_end
        if (
            pre
            and data[: len(pre)] == pre
            and data[-len(tail) :] == tail
            and not parser._buf
            and parser._pending is None
            and len(pre) + len(tail) < len(data) <= parser.max_event_bytes
        ):
            # What an engine sends once the frame is known: reads of whole framed content chunks,
            # one (paced: no line break between the texts) or several (saturated). A raw line
            # break is never inside a JSON string: two per chunk give the number of chunks.
            body = data[len(pre) - 1 : len(data) - len(tail) + 1]  # first text's quote to last's
            try:
                if 0x0A not in body:  # no line feed (an int test: the cheapest)
                    text = orjson.loads(body)
                    if text:  # a str: the body is quoted at both ends
                        self.content.append(text)
                        self.chunk_ns.append(t_ns)
                        return self.done
                else:
                    texts = self._framed(body, data.count(b"\n") >> 1)
                    if texts is not None:
                        self.content.extend(texts)
                        self.chunk_ns.extend(repeat(t_ns, len(texts)))
                        return self.done
            except orjson.JSONDecodeError:
                pass  # not the same shape after all: the rules below decide
        if parser._buf:
            data = parser._buf + data
        elif data.endswith(b"}\n\n") and data.startswith(b"data: {") and data.find(b"\n") == len(data) - 2:
            # What a paced engine sends: one event per read, one line of it. Folded here with one
            # parse and no split; anything unusual falls through to the general path below.
            if parser._pending is None and len(data) <= parser.max_event_bytes and self._one(data, t_ns):
                return self.done
        if b"\r" in data:  # CR line ends: the parser's full rules (same results, slower)
            parser._buf = b""  # already in `data`
            self._events(parser.feed(data), t_ns)
            return self.done
        # The hot path, once per socket read: the parser's fast path fused with the fold of a
        # plain content chunk (no event tuples, no call per chunk); anything else goes through
        # `SSEParser._line` and `_chunk`, the one full statement of the rules.
        lines = data.split(b"\n")
        parser._buf = lines.pop()
        if len(data) > parser.max_event_bytes:
            too_large: list[Event] = []
            if parser.oversized(lines, too_large):
                return self._events(too_large, t_ns)
        loads = orjson.loads
        add_text = self.content.append
        fresh = 0  # plain content chunks of this read, stamped t_ns at the end
        pre, suf = self.frame
        lp, ls = len(pre), len(suf)
        for line in lines:
            if not line:
                if parser._pending is None:
                    continue
            elif parser._pending is None:
                if lp and line[:lp] == pre and line[-ls:] == suf and len(line) > lp + ls:
                    # this stream's content-chunk line with another text: parse the text only
                    try:  # the text with its quotes: the frame's last byte and the suffix's first
                        text = loads(line[lp - 1 : len(line) - ls + 1])
                    except orjson.JSONDecodeError:
                        pass  # not the same shape after all: the full rules below decide
                    else:
                        if text:
                            add_text(text)
                            fresh += 1
                            continue
                if line[:7] == b"data: {":
                    try:
                        obj = loads(line[6:])
                    except orjson.JSONDecodeError:
                        pass
                    else:
                        if obj.get("error") is None and obj.get("object") != "error":
                            text = _plain_text(obj)
                            if text is None:
                                self._chunk(obj, t_ns)
                                continue
                            add_text(text)
                            if self.first_chars is None:
                                self.first_chars = len(text)
                            if not self.frame_tried:
                                self._learn(line, obj, text)
                                pre, suf = self.frame
                                lp, ls = len(pre), len(suf)
                            fresh += 1
                            continue
            events: list[Event] = []
            end = parser._line(line, events)
            self._events(events, t_ns)
            if end:
                break
        if fresh:
            self.chunk_ns.extend(repeat(t_ns, fresh))
            if self.t_first_ns is None:
                self.t_first_ns = t_ns
        return self.done

    def _framed(self, body: bytes, events: int) -> list[str] | None:
        """The texts of a read of `events` (2+) framed content chunks, `body` running from the
        first text's opening quote to the last one's closing quote; None when it is not that,
        or not provably so (or a JSONDecodeError): the full rules then decide.

        One parse for the whole read: each boundary (suffix, blank line, prefix) becomes `","`
        and the read a JSON array of strings. Exact because:
        - a line break cannot occur inside a JSON string, so every boundary replaced is one
          between chunks, and a line break left over (a boundary of another shape, or a blank
          line JSON would take as whitespace between strings) refuses the read;
        - with no backslash before any quote, no quote is escaped: every quote opens or closes
          a string, and the read holds (2 × events + the texts' own quotes) / 2 strings. If the
          array is exactly `events` strings (no number, no nested array), the texts hold no
          quote: each string is one chunk's text, which the parse accepted as a JSON string.
          A read whose texts escape a quote (`\\"`) takes the full rules, chunk by chunk.
        """
        joined = body.replace(self.frame_join, b'","')
        if 0x0A in joined or b'\\"' in joined:
            return None
        texts: list[str] = orjson.loads(b"[%s]" % joined)
        if len(texts) != events or "" in texts or not all(map(isinstance, texts, repeat(str))):
            return None
        return texts

    def _one(self, data: bytes, t_ns: int) -> bool:
        """A read that is exactly `data: {json}` and a blank line: fold it; False (nothing
        changed) when it is not a JSON chunk, so the general path states the rules."""
        try:
            obj = orjson.loads(memoryview(data)[6:])  # no copy; the blank line is JSON whitespace
        except orjson.JSONDecodeError:
            return False
        if not isinstance(obj, dict):
            return False
        text = _plain_text(obj)
        if text is None:
            if obj.get("error") is not None or obj.get("object") == "error":
                return False
            self._chunk(obj, t_ns)
            return True
        self.content.append(text)
        self.chunk_ns.append(t_ns)
        if self.first_chars is None:
            self.first_chars = len(text)
        if self.t_first_ns is None:
            self.t_first_ns = t_ns
        if not self.frame_tried:
            self._learn(data[:-2], obj, text)
        return True

    def _learn(self, line: bytes, obj: dict[str, Any], text: str) -> None:
        """Learn this stream's content-chunk line from its first one (`line` parsed to `obj`, a
        plain content chunk carrying `text`): every byte but the text's is kept as `frame`.

        Servers send each content chunk with the same bytes around the text (id, model and
        created do not change within a stream), so a later line with that prefix and suffix
        needs only its text parsed (~0.7 µs less per chunk than parsing the object, measured by
        tests/bench/bench_fold.py). It is exact: the frame is kept only if the line parses to
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
        if _plain_text(probe) != "\x01":
            return
        probe["choices"][0]["delta"]["content"] = text
        if probe == obj:
            self.frame = (pre, suf)
            self.frame_end = suf + b"\n\n"
            self.frame_join = suf + b"\n\n" + pre

    def close(self, t_ns: int | None = None) -> bool:
        """End of the HTTP body; a stream that never said [DONE] is complete only if it finished."""
        self._events(self.parser.close(), t_ns if t_ns is not None else self.t_last_ns or 0)
        if not self.done and self.error_kind is None:
            if self.finish_reason is None:
                self.error_kind = "stream"
                self.error_message = "the stream ended without [DONE] or a finish_reason (truncated response)"
            self.done = True
        return True

    def _events(self, events: list[Event], t_ns: int) -> bool:
        for kind, value in events:
            if kind == CHUNK:
                self._chunk(value, t_ns)
            elif kind == DONE:
                self.done = True
            elif kind == ERROR:
                self.error_kind, self.error_message = "error_object", error_text(value)
                self.done = True
            elif kind == TOO_LARGE:
                self.error_kind, self.error_message = TOO_LARGE, value
                self.done = True
            else:
                self.error_kind = "malformed"
                self.error_message = f"not an SSE JSON event: {value!r}"
                self.done = True
        return self.done

    def _chunk(self, obj: dict[str, Any], t_ns: int) -> None:
        usage = obj.get("usage")
        if usage:
            self.usage = usage
        choices = obj.get("choices")
        if not choices:
            return
        choice = choices[0]
        delta = choice.get("delta")
        chars = -1  # characters this delta carries; -1: nothing (not a chunk of the answer)
        if delta:
            text = delta.get("content")
            if text:
                self.content.append(text)
                chars = len(text)
            if len(delta) > 1 or chars < 0:  # a bare {"content": …} delta has nothing else to look at
                text = delta.get("reasoning_content") or delta.get("reasoning")
                if text:
                    self.reasoning.append(text)
                    chars = max(chars, 0) + len(text)
                calls = delta.get("tool_calls")
                if calls and isinstance(calls, list):
                    tail = self.tool_deltas > 0
                    n = 0
                    for part in calls:
                        if isinstance(part, dict):
                            n += _merge_call(self.calls, self.args, part)
                            if tail:
                                _merge_call(self.tail_calls, self.tail_args, part)
                    self.tool_deltas += 1
                    chars = max(chars, 0) + n
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish
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


def _merge_call(calls: dict[int, dict[str, Any]], args: dict[int, list[str]], part: dict[str, Any]) -> int:
    """Fold one streamed tool-call delta into `calls` by index, as the reference client does: a
    delta without `index` continues call 0; `id`, `type` and the function name are replaced by the
    latest non-empty piece (a name sent in pieces keeps the last one); arguments are kept as
    pieces in `args` (`_assembled` joins them once). Returns the characters the piece carries."""
    index = part.get("index", 0)
    call = calls.get(index)
    if call is None:
        call = calls[index] = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        args[index] = []
    if part.get("id"):
        call["id"] = part["id"]
    if part.get("type"):
        call["type"] = part["type"]
    fn = part.get("function") or {}
    name, piece = fn.get("name"), fn.get("arguments")
    n = 0
    if isinstance(name, str):
        n = len(name)
        if name:
            call["function"]["name"] = name
    elif name:
        call["function"]["name"] = name
    if isinstance(piece, str):
        n += len(piece)
        if piece:
            args[index].append(piece)
    return n


def _assembled(calls: dict[int, dict[str, Any]], args: dict[int, list[str]]) -> tuple[dict[str, Any], ...]:
    """The calls by index, each with its argument pieces joined."""
    out = []
    for i in sorted(calls):
        call = calls[i]
        fn = call["function"]
        out.append({**call, "function": {**fn, "arguments": fn["arguments"] + "".join(args[i])}})
    return tuple(out)


def _plain_text(obj: dict[str, Any]) -> str | None:
    """The text of a chunk whose only effect on the fold is one piece of content (no reasoning,
    tool call, finish reason, usage or error; what `ChatStream._chunk` would do with it), else None."""
    if obj.get("error") is not None or obj.get("object") == "error" or obj.get("usage"):
        return None
    choices = obj.get("choices")
    if not choices or not isinstance(choices, list):
        return None
    choice = choices[0]
    if not isinstance(choice, dict) or choice.get("finish_reason"):
        return None
    delta = choice.get("delta")
    if not delta or not isinstance(delta, dict):
        return None
    text = delta.get("content")
    if not text or not isinstance(text, str):
        return None
    if len(delta) > 1 and (delta.get("reasoning_content") or delta.get("reasoning") or delta.get("tool_calls")):
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
