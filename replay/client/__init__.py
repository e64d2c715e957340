"""The HTTP client: one streamed chat turn over HTTP/1.1 (a fast transport under httpx's API,
the SSE fold, the response caps) and the event loop it runs on. The transport loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .caps import DEFAULT_LIMITS, ResponseLimits, format_size

if TYPE_CHECKING:
    from .bounded import (
        INFO_MAX_BYTES,
        METRICS_MAX_BYTES,
        TOKENIZE_MAX_BYTES,
        BoundedReadError,
        BoundedResponse,
        aread_bounded,
        read_bounded,
    )
    from .eventloop import current_loop, event_loop, frozen_heap, run_loop, watch_pipe
    from .sse import ChatStream
    from .stream import CHAT_PATH, StreamClient, StreamResult, base_without_v1
    from .transport import Connections, FastTransport


__all__ = [
    "CHAT_PATH",
    "DEFAULT_LIMITS",
    "INFO_MAX_BYTES",
    "METRICS_MAX_BYTES",
    "TOKENIZE_MAX_BYTES",
    "BoundedReadError",
    "BoundedResponse",
    "ChatStream",
    "Connections",
    "FastTransport",
    "ResponseLimits",
    "StreamClient",
    "StreamResult",
    "aread_bounded",
    "base_without_v1",
    "current_loop",
    "event_loop",
    "format_size",
    "frozen_heap",
    "read_bounded",
    "run_loop",
    "watch_pipe",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".bounded": (
        "INFO_MAX_BYTES",
        "METRICS_MAX_BYTES",
        "TOKENIZE_MAX_BYTES",
        "BoundedReadError",
        "BoundedResponse",
        "aread_bounded",
        "read_bounded",
    ),
    ".eventloop": ("current_loop", "event_loop", "frozen_heap", "run_loop", "watch_pipe"),
    ".sse": ("ChatStream",),
    ".stream": ("CHAT_PATH", "StreamClient", "StreamResult", "base_without_v1"),
    ".transport": ("Connections", "FastTransport"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
