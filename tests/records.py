"""The one `Record` builder of the tests (a test helper): `record(**fields)` is a clean turn with
the given fields replaced, so a test spells only what it is about and a new field of `Record`
is added here once.

The clean turn: trajectory `t0`, repeat 1, its first client turn (turn 1), sent at 0 on slot 0
of worker 0, a first chunk 5 ms later and the last 10 ms later, the answer "ok" (two tokens by
the server's usage, none by a client tokenizer), finished with "stop" under HTTP 200, in the
performance window, no error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replay.results.records import Record

MS = 1_000_000  # ns per millisecond

CLEAN = Record(
    instance_id="t0",
    trajectory_id="t0",
    repeat=1,
    turn=1,
    client_turn_index=0,
    slot=0,
    worker=0,
    prompt_sha256="0" * 64,
    salt_repeat="4461",
    salt_conversation="e643",
    t_send_ns=0,
    t_first_ns=5 * MS,
    t_last_ns=10 * MS,
    chunk_ns=(5 * MS, 10 * MS),
    delay_s=0.0,
    in_window=True,
    content="ok",
    reasoning="",
    tool_calls=(),
    finish_reason="stop",
    prompt_tokens=100,
    completion_tokens=2,
    cached_tokens=None,
    client_prompt_tokens=None,
    client_output_tokens=None,
    http_status=200,
    error_kind=None,
    error_message=None,
)


def record(**fields: Any) -> Record:
    """`CLEAN` with `fields` replaced (an unknown field name is a TypeError, as in `Record(...)`)."""
    return replace(CLEAN, **fields)
