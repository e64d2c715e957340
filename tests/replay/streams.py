"""Whole-body views of the incremental SSE parser and stream folder, for tests."""

from __future__ import annotations

from collections.abc import Iterable

from replay.client.sse import ChatStream, Event, SSEParser


def parse_sse(data: bytes) -> list[Event]:
    """All events of a complete SSE body."""
    parser = SSEParser()
    return parser.feed(data) + parser.close()


def parse_stream(reads: Iterable[tuple[int, bytes]]) -> ChatStream:
    """Fold a whole stream given as (arrival ns, bytes) reads."""
    stream = ChatStream()
    for t_ns, data in reads:
        if stream.feed(data, t_ns):
            return stream
    stream.close()
    return stream
