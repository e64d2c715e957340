"""The pure SSE parser and the chat-stream fold (replay.client.sse)."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from streams import parse_sse, parse_stream

from replay.client.sse import CHUNK, DONE, ERROR, MALFORMED, ChatStream


def _data(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _delta(**delta: object) -> bytes:
    return _data({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


FINISH = _data({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = _data({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
DONE_LINE = b"data: [DONE]\n\n"


def test_skips_blank_comment_event_id_retry_lines() -> None:
    body = b": keep-alive\n\nevent: message\nid: 4\nretry: 10\n" + _delta(content="hi") + DONE_LINE
    assert parse_sse(body) == [
        (CHUNK, {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}),
        (DONE, None),
    ]


def test_done_ends_and_later_bytes_are_ignored() -> None:
    assert parse_sse(DONE_LINE + _delta(content="late")) == [(DONE, None)]


def test_crlf_line_endings_and_data_without_space() -> None:
    body = b'data:{"choices":[]}\r\n\r\ndata: [DONE]\r\n\r\n'
    assert parse_sse(body) == [(CHUNK, {"choices": []}), (DONE, None)]


def test_error_object_under_200_is_an_error_event() -> None:
    events = parse_sse(_delta(content="a") + _data({"error": {"message": "KV cache full", "code": 503}}))
    assert events[-1] == (ERROR, {"error": {"message": "KV cache full", "code": 503}})


def test_vllm_style_error_object() -> None:
    events = parse_sse(_data({"object": "error", "message": "boom", "type": "BadRequestError"}))
    assert events[0][0] == ERROR


def test_error_null_is_an_ordinary_chunk() -> None:
    assert parse_sse(_data({"choices": [], "error": None}))[0][0] == CHUNK


def test_non_json_data_line_is_malformed_and_the_stream_goes_on() -> None:
    events = parse_sse(b"data: {not json\n\n" + DONE_LINE)
    assert events == [(MALFORMED, "{not json"), (DONE, None)]


def test_bare_line_that_is_no_sse_field_is_malformed() -> None:
    assert parse_sse(b'{"choices": []}\n\n')[0][0] == MALFORMED
    assert parse_sse(b"garbage\n")[0][0] == MALFORMED


def test_json_split_over_two_data_lines_of_one_event_is_joined() -> None:
    assert parse_sse(b'data: {"choices":\ndata: []}\n\n') == [(CHUNK, {"choices": []})]


def test_truncated_json_at_end_of_input_is_malformed() -> None:
    assert parse_sse(b'data: {"choices": [')[0][0] == MALFORMED


def test_final_line_without_newline_still_counts() -> None:
    assert parse_sse(b"data: [DONE]") == [(DONE, None)]


def _stream_body() -> bytes:
    return (
        _delta(role="assistant")
        + _delta(reasoning_content="think ")
        + _delta(reasoning="more")
        + _delta(content="Hel")
        + _delta(content="lo")
        + _delta(
            tool_calls=[{"index": 0, "id": "call_a", "type": "function", "function": {"name": "bash", "arguments": ""}}]
        )
        + _delta(
            tool_calls=[
                {"index": 1, "id": "call_b", "type": "function", "function": {"name": "read", "arguments": '{"p":'}}
            ]
        )
        + _delta(tool_calls=[{"index": 0, "function": {"arguments": '{"cmd":'}}])
        + _delta(tool_calls=[{"index": 0, "function": {"arguments": '"ls"}'}}])
        + _delta(tool_calls=[{"index": 1, "function": {"arguments": "1}"}}])
        + FINISH
        + USAGE
        + DONE_LINE
    )


def test_fold_merges_content_reasoning_tool_calls_usage_and_finish() -> None:
    s = parse_stream([(1000, _stream_body())])
    assert (s.error_kind, s.done) == (None, True)
    assert "".join(s.content) == "Hello"
    assert "".join(s.reasoning) == "think more"
    assert s.tool_calls() == (
        {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": '{"p":1}'}},
    )
    assert s.finish_reason == "stop"
    assert s.usage == {"prompt_tokens": 7, "completion_tokens": 3}
    # role-only, finish and usage chunks carry no delta: 9 stamped chunks
    assert list(s.chunk_ns) == [1000] * 9


def test_fold_stamps_first_and_each_delta_with_its_read_time() -> None:
    reads = [
        (10, _delta(role="assistant")),
        (20, _delta(content="a") + _delta(content="b")),
        (30, FINISH),
        (40, DONE_LINE),
    ]
    s = parse_stream(reads)
    assert (s.t_first_ns, list(s.chunk_ns), s.t_last_ns) == (20, [20, 20], 40)


@given(st.lists(st.integers(min_value=1, max_value=len(_stream_body()) - 1), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_fold(cuts: list[int]) -> None:
    body = _stream_body()
    points = [0, *sorted(set(cuts)), len(body)]
    split = parse_stream([(1, body[a:b]) for a, b in pairwise(points) if b > a])
    whole = parse_stream([(1, body)])
    assert (split.content, split.reasoning, split.tool_calls(), split.usage, split.finish_reason, split.error_kind) == (
        whole.content,
        whole.reasoning,
        whole.tool_calls(),
        whole.usage,
        whole.finish_reason,
        whole.error_kind,
    )


def _facts(s: ChatStream) -> tuple[object, ...]:
    return (
        s.content,
        s.reasoning,
        s.tool_calls(),
        s.usage,
        s.finish_reason,
        s.error_kind,
        list(s.chunk_ns),
        s.t_first_ns,
        s.t_last_ns,
        s.dropped_reasoning_chars,
    )


def test_crlf_line_ends_fold_like_lf_ones_read_by_read() -> None:
    # the fold has a fast path for LF-only reads and the parser's full rules otherwise: same facts
    events = [e + b"\n\n" for e in _stream_body().split(b"\n\n") if e]
    lf = [(10 * k, b"".join(events[i : i + 2])) for k, i in enumerate(range(0, len(events), 2))]
    crlf = [(t, data.replace(b"\n", b"\r\n")) for t, data in lf]
    assert _facts(parse_stream(crlf)) == _facts(parse_stream(lf))
    assert list(parse_stream(lf).chunk_ns) == [0, 10, 10, 20, 20, 30, 30, 40, 40]


@given(st.lists(st.integers(min_value=1, max_value=len(_stream_body().replace(b"\n", b"\r\n")) - 1), max_size=12))
def test_any_split_of_a_crlf_stream_gives_the_lf_fold(cuts: list[int]) -> None:
    body = _stream_body().replace(b"\n", b"\r\n")
    points = [0, *sorted(set(cuts)), len(body)]
    split = parse_stream([(1, body[a:b]) for a, b in pairwise(points) if b > a])
    assert _facts(split) == _facts(parse_stream([(1, _stream_body())]))


def test_stream_without_done_but_with_finish_is_complete() -> None:
    assert parse_stream([(1, _delta(content="x") + FINISH)]).error_kind is None


def test_stream_cut_before_finish_is_unterminated() -> None:
    s = parse_stream([(1, _delta(content="x"))])
    assert s.error_kind == "unterminated" and "truncated" in (s.error_message or "")


def test_error_object_becomes_error_kind_with_its_message() -> None:
    s = parse_stream([(1, _delta(content="x") + _data({"error": {"message": "overloaded", "type": "server_error"}}))])
    assert (s.error_kind, s.error_message) == ("error_object", "overloaded (server_error)")


def test_malformed_line_becomes_error_kind_and_the_fold_goes_on() -> None:
    s = ChatStream()
    assert s.feed(b"data: nope\n\n", 5) is False
    assert s.error_kind == "malformed" and "nope" in (s.error_message or "")
    assert s.feed(_delta(content="later") + DONE_LINE, 6) is True
    assert (s.content, s.error_kind) == (["later"], "malformed")


def test_one_event_per_read_folds_like_the_general_path() -> None:
    """A paced engine sends each event in its own read: that read takes a shortcut (one parse,
    no split) whose facts must be those of the general path, whatever the event is."""
    events = [e + b"\n\n" for e in _stream_body().split(b"\n\n") if e]
    extra = [
        _data({"error": {"message": "boom"}}),  # an error object under 200: the general path's rule
        b'data: {"not json\n\n',  # malformed
        _data({"choices": {"delta": {"content": "x"}}}),  # a shape the reference's decoder rejects
        _delta(reasoning="dropped", content="kept"),  # content and reasoning in one delta
        _delta(tool_calls=[{"index": 0, "function": {"arguments": {"x": 1}}}]),  # a failing tool call
    ]
    for tail in ([], *([e] for e in extra)):
        reads = [(10 * k, e) for k, e in enumerate(events[:-1] + tail)]
        # the general path, forced by reading two events at once where the shortcut cannot apply
        general = ChatStream()
        for t, data in reads:
            general.feed(b"\n" + data, t)  # a leading blank line: not one-event-exact
        one = parse_stream(reads)
        assert _facts(one) == _facts(general) and (one.first_chars, one.error_message) == (
            general.first_chars,
            general.error_message,
        )
        assert tail == [] or one.error_kind is not None or one.dropped_reasoning_chars
    s = parse_stream([(10 * k, e) for k, e in enumerate(events)])
    assert list(s.chunk_ns) == [10 * k for k in range(1, 10)] and (s.t_first_ns, s.first_chars) == (10, 6)


# ---- the learned content-chunk frame (ChatStream._learn): a shortcut that must never change a fact

# (prefix, suffix) of a content chunk's line: compact (vLLM, SGLang) and spaced (Python's json.dumps)
_FRAMES = [
    (
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"',
        b'"},"finish_reason":null}]}',
    ),
    (b'data: {"choices": [{"index": 0, "delta": {"role": null, "content": "', b'", "tool_calls": null}}]}'),
]
# raw bytes that may stand between the frame's prefix and suffix: escapes, quotes and JSON
# structure, so some lines match the frame's bytes yet are not a chunk of its shape
_INNER = st.one_of(
    st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)[1:-1].encode()),
    st.lists(
        st.sampled_from(
            [
                b"a",
                b'"',
                b"\\",
                b"u00e9",
                b"\\n",
                b'","x":"',
                b'"},"role":"',
                b'"],"usage":{"t":1},"y":["',
                b" ",
                b"\n\n",
                b'",',
                b'",["',
                b'"],"',
                b',"',
            ]
        ),
        max_size=5,
    ).map(b"".join),
)


class _NoFrame(ChatStream):
    def _learn(self, line: bytes, obj: dict[str, object], text: str) -> None:
        pass  # the frame is never learned: every line takes the full rules


def _unframed(reads: list[tuple[int, bytes]]) -> ChatStream:
    s = _NoFrame()
    for t, data in reads:
        if s.feed(data, t):
            return s
    s.close()
    return s


@given(
    st.lists(_INNER, min_size=1, max_size=8),
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.sampled_from(_FRAMES),
)
@example([b'a","b', b"c"], [1, 2], _FRAMES[0])  # a stray quote: one more string than chunks in the read
@example([b"a", b"b", b"c"], [1, 3], _FRAMES[1])  # three framed chunks in one read: one parse
@example([b'a",\n\n"b'], [1], _FRAMES[0])  # a blank line between two strings: JSON whitespace, not a boundary
@example([b"x", b'a",\n\n"b'], [1, 2], _FRAMES[0])  # the same after a good chunk in one read
@example([b'p",["x', b"y", b'z"],"r'], [1, 3], _FRAMES[0])  # stray quotes nesting an array: as many elements
@example([b"a\\", b',"b'], [1, 2], _FRAMES[0])  # an escaped boundary quote: strings that straddle chunks
@pytest.mark.slow
def test_a_learned_frame_folds_exactly_like_the_full_rules(
    inners: list[bytes], sizes: list[int], frame: tuple[bytes, bytes]
) -> None:
    pre, suf = frame
    lines = [pre + b"first" + suf] + [pre + inner + suf for inner in inners]
    events = [line + b"\n\n" for line in lines] + [FINISH, DONE_LINE]
    # the first line alone (the frame is learned from a content chunk read alone, as a paced
    # engine sends it), then consecutive events per read, `sizes` cycled
    reads: list[tuple[int, bytes]] = [(0, events[0])]
    taken = 1
    while taken < len(events):
        size = sizes[len(reads) % len(sizes)]
        reads.append((10 * len(reads), b"".join(events[taken : taken + size])))
        taken += size
    framed, full = parse_stream(reads), _unframed(reads)
    assert framed.frame == frame  # learned from the first line
    assert _facts(framed) == _facts(full)
    assert (framed.first_chars, framed.error_message) == (full.first_chars, full.error_message)


def test_a_frame_is_not_learned_when_the_first_content_key_is_not_the_delta_text() -> None:
    # "content" first appears outside the delta: the probe finds the varying string elsewhere
    line = b'data: {"x":{"content":"a"},"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}'
    s = parse_stream(
        [(1, line + b"\n\n"), (2, line.replace(b'{"content":"a"},"choices', b'{"content":"b"},"choices') + b"\n\n")]
    )
    assert s.frame == (b"", b"") and s.content == ["a", "a"]


# ---- the reference's rules for what a delta holds (docs/closed-loop.md, docs/metrics.md)


def test_a_delta_with_content_and_reasoning_keeps_the_content_and_counts_the_dropped_reasoning() -> None:
    """A chunk spanning </think> (MTP): the reference keeps the content, drops that delta's
    reasoning; the first chunk is its content alone."""
    s = parse_stream(
        [
            (10, _delta(reasoning_content="plan")),
            (20, _delta(reasoning_content="…done", content="Answer")),
            (30, _delta(content=" more") + FINISH + DONE_LINE),
        ]
    )
    assert ("".join(s.reasoning), "".join(s.content), s.dropped_reasoning_chars) == ("plan", "Answer more", 5)
    assert (s.error_kind, list(s.chunk_ns), s.t_first_ns, s.first_chars) == (None, [10, 20, 30], 10, 4)
    first = parse_stream([(10, _delta(reasoning="r", content="c") + FINISH + DONE_LINE)])
    assert (first.content, first.reasoning, first.first_chars, first.dropped_reasoning_chars) == (["c"], [], 1, 1)


def test_reasoning_content_is_preferred_to_reasoning_and_empty_content_keeps_reasoning() -> None:
    s = parse_stream([(1, _delta(reasoning_content="a", reasoning="b") + _delta(content="", reasoning="c") + FINISH)])
    assert (s.reasoning, s.content, s.dropped_reasoning_chars) == (["a", "c"], [], 0)


def test_an_error_object_is_noted_and_what_follows_is_folded() -> None:
    err = _data({"error": {"message": "overloaded", "type": "server_error"}})
    s = parse_stream([(1, _delta(content="x") + err + _delta(content="y") + FINISH + DONE_LINE)])
    assert (s.error_kind, s.error_message, s.content, s.finish_reason) == (
        "error_object",
        "overloaded (server_error)",
        ["x", "y"],
        "stop",
    )


def test_only_empty_choices_then_done_is_empty() -> None:
    s = parse_stream([(1, USAGE + DONE_LINE)])
    s.settle(whole=True)
    assert (s.error_kind, s.usage) == ("empty", {"prompt_tokens": 7, "completion_tokens": 3})
    answered = parse_stream([(1, _data({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + DONE_LINE)])
    answered.settle(whole=True)
    assert answered.error_kind is None  # an empty answer that says why it stopped is an answer


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": {"index": 0, "delta": {"content": "x"}}},
        {"choices": [{"index": 0, "delta": "x"}]},
        {"choices": ["x"]},
        {"choices": [None]},
        {"choices": [{"delta": {"content": 1}}]},
        {"choices": [{"delta": {"reasoning": ["x"]}}]},
        {"choices": [{"delta": {"role": 5, "content": "x"}}]},
        {"choices": [{"delta": {"content": "x"}, "finish_reason": 3}]},
        {"choices": [{"delta": {"tool_calls": {"index": 0}}}]},
        {"choices": [{"delta": {"tool_calls": ["x"]}}]},
    ],
)
def test_a_chunk_the_reference_decoder_rejects_is_skipped_as_malformed(chunk: dict[str, object]) -> None:
    s = parse_stream([(1, _delta(content="a") + _data(chunk) + _delta(content="b") + FINISH + DONE_LINE)])
    assert (s.error_kind, s.content, s.finish_reason) == ("malformed", ["a", "b"], "stop")


def test_a_usage_that_is_no_object_is_malformed_but_its_chunk_still_counts() -> None:
    s = parse_stream([(1, _data({"choices": [{"delta": {"content": "a"}}], "usage": 5}) + FINISH + DONE_LINE)])
    assert (s.error_kind, s.content, s.usage) == ("malformed", ["a"], None)


def _calls(*parts: dict[str, object]) -> bytes:
    return _delta(tool_calls=list(parts))


@pytest.mark.parametrize(
    "part",
    [
        {"index": 0, "function": {"name": "bash", "arguments": {"command": "ls"}}},
        {"index": 0, "function": {"arguments": ["ls"]}},
        {"index": 0, "function": {"arguments": 5}},
        {"index": [0], "function": {"arguments": "{}"}},
        {"index": {"i": 0}, "function": {"arguments": "{}"}},
        {"index": 0, "function": "bash"},
    ],
)
def test_a_tool_call_piece_the_reference_merge_fails_on_fails_the_turn(part: dict[str, object]) -> None:
    s = parse_stream([(1, _calls(part) + _delta(content="after") + FINISH + DONE_LINE)])
    s.settle(whole=True)
    assert s.error_kind == "tool_call" and s.content == ["after"]  # the stream is still read to its end


def test_empty_object_arguments_are_skipped_as_the_reference_skips_them() -> None:
    s = parse_stream([(1, _calls({"index": 0, "id": "c", "function": {"name": "bash", "arguments": {}}}) + FINISH)])
    s.settle(whole=True)
    assert s.error_kind is None and s.tool_calls()[0]["function"] == {"name": "bash", "arguments": ""}


def test_tool_call_indexes_that_cannot_be_ordered_fail_the_turn() -> None:
    parts: list[dict[str, Any]] = [
        {"index": 0, "function": {"arguments": "a"}},
        {"index": "1", "function": {"arguments": "b"}},
    ]
    s = parse_stream([(1, _calls(*parts) + FINISH + DONE_LINE)])
    before = s.error_kind  # nothing wrong yet: the calls are ordered when the turn settles
    s.settle(whole=True)
    assert before is None and s.error_kind == "tool_call" and len(s.tool_calls()) == 2


def test_a_failed_kind_outranks_an_earlier_partial_one() -> None:
    bad = {"index": 0, "function": {"arguments": {"x": 1}}}
    s = parse_stream([(1, b"data: nope\n\n" + _calls(bad) + FINISH + DONE_LINE)])
    assert s.error_kind == "tool_call"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_KEYS = st.sampled_from(["choices", "delta", "content", "reasoning", "tool_calls", "index", "function", "arguments"])
_CHUNKS = st.recursive(
    _JSON,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@given(st.lists(_CHUNKS, max_size=6))
@pytest.mark.slow
def test_no_chunk_shape_raises(chunks: list[object]) -> None:
    """A server may send any JSON: the fold notes it, it never raises (one bad chunk once ended
    a whole run)."""
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + DONE_LINE
    s = parse_stream([(1, body)])
    s.settle(whole=True)
    s.tool_calls()
    s.after_first()
    assert s.error_kind in (None, "malformed", "error_object", "tool_call", "empty")
