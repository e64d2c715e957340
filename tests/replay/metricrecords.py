"""The metrics tests' records (tests/replay/results): `rec`, a turn given in seconds, and
`RECORDS`, six turns of three trajectories with known answers."""

from __future__ import annotations

from records import record

from replay.results.records import Record

S = 1_000_000_000  # ns per second


def rec(
    instance: str,
    turn: int,
    send: float,
    first: float | None,
    last: float | None,
    *,
    out: int | None = None,
    client_out: int | None = None,
    prompt: int | None = 100,
    client_prompt: int | None = None,
    cached: int | None = None,
    error: str | None = None,
    in_window: bool = True,
    chunks: tuple[float, ...] = (),
    finish: str | None = "stop",
    content: str = "",
    first_chars: int | None = None,
    after_first: int | None = None,
) -> Record:
    return record(
        instance_id=instance,
        trajectory_id=instance.split("__")[0],
        turn=turn,
        client_turn_index=turn // 2,
        prompt_sha256="x",
        salt_conversation="abcd",
        t_send_ns=int(send * S),
        t_first_ns=None if first is None else int(first * S),
        t_last_ns=None if last is None else int(last * S),
        chunk_ns=tuple(int(c * S) for c in chunks),
        in_window=in_window,
        content=content,
        finish_reason=None if error else finish,
        prompt_tokens=None if error else prompt,
        completion_tokens=None if error else out,
        cached_tokens=cached,
        client_prompt_tokens=client_prompt,
        client_output_tokens=client_out,
        http_status=None if error else 200,
        error_kind=error,
        error_message=error,
        first_chunk_chars=first_chars,
        client_tokens_after_first=after_first,
    )


RECORDS = [
    rec("A", 1, 0.0, 0.1, 1.0, out=11, client_out=12, client_prompt=98, cached=40, chunks=(0.1, 0.4, 1.0)),
    rec("B", 1, 0.5, 0.6, 1.5, out=None, client_out=4, prompt=None, finish="length"),
    rec("A", 3, 2.0, 2.2, 3.0, out=5, cached=60),
    rec("C", 1, 1.0, None, 1.2, error="http"),
    rec("C", 3, 1.2, None, None, error="aborted"),
    rec("B", 3, 3.5, 3.6, 9.0, out=50, in_window=False),  # the tail: issued after the close
]
