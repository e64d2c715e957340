"""Drive agentic-bench's streaming client against the calibration server (run by path, standalone).

Not imported by trajbench: `replay.calibrate` runs this file with an interpreter where the
`agentic-bench` distribution (module `abench`, aiohttp) is installed, so it imports only the
standard library, aiohttp and abench. Each turn is agentic-bench's own per-turn code path
(`abench.replay.engine._run_session`): `session.post(json=...)` on a `TCPConnector(limit=2C)`
session, then `abench.replay.transport._process_stream`. Prints one JSON object of raw facts:
client CPU and wall time, and per turn the chunk arrival times (perf_counter is CLOCK_MONOTONIC on
Linux, the server's stamp clock), the server stamps carried in the text, and whether it was its
slot's first turn.

    python abench_driver.py URL --concurrency 128 --turns 2048 --tokens 256
    python abench_driver.py URL --concurrency 128 --sessions FILE --instances 256

With `--sessions` (a file `replay.calibrate.workload.write_sessions` wrote) each slot replays
instances in FIFO order, turn after turn, its history growing by each turn's new messages as
agentic-bench's engine grows it; without, every turn is the same two-word prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
from abench.replay.transport import _process_stream


def _fixed(concurrency: int, turns: int, tokens: int) -> Iterator[list[dict[str, Any]]]:
    """Instances of one turn each: the fixed two-word prompt."""
    payload = {
        "model": "cal",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": tokens,
    }
    for _ in range(turns):
        yield [payload]


def _replayed(path: str, instances: int) -> Iterator[list[dict[str, Any]]]:
    """`instances` instances cycling over the file's sessions, each a list of request bodies
    built lazily turn by turn (a generator per instance)."""
    with open(path, "rb") as f:
        params = json.loads(f.readline())["params"]
        sessions = [json.loads(line) for line in f]
    for k in range(instances):
        yield _session_bodies(sessions[k % len(sessions)], params)  # type: ignore[misc]


def _session_bodies(session: dict[str, Any], params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for delta in session["turns"]:
        messages.extend(delta)
        body = dict(params, messages=messages)
        if session["tools"] is not None:
            body["tools"] = session["tools"]
        yield body


async def _run(url: str, concurrency: int, instances: Iterator[Any]) -> dict[str, Any]:
    per_turn: list[tuple[float, list[float], str, bool]] = []
    failed = [0]
    connector = aiohttp.TCPConnector(limit=max(concurrency * 2, 32), ssl=False)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as http:

        async def slot() -> None:
            first = True
            for bodies in instances:
                for payload in bodies:
                    start = time.perf_counter()
                    try:
                        async with http.post(
                            url, json=payload, headers={"X-Session-ID": "cal"}, timeout=aiohttp.ClientTimeout(total=120)
                        ) as resp:
                            text, ttft, itl, _usage = await _process_stream(resp, start)
                    except Exception:
                        failed[0] += 1
                        break  # the rest of the instance is not sent (as a failed turn ends it)
                    per_turn.append((start + ttft, itl, text, first))
                    first = False

        cpu0, wall0 = time.process_time(), time.monotonic_ns()
        await asyncio.gather(*(slot() for _ in range(concurrency)))
        cpu1, wall1 = time.process_time(), time.monotonic_ns()
    out = []
    for first_s, itl, text, first in per_turn:
        arrivals = [int(first_s * 1e9)]
        for gap in itl:
            arrivals.append(arrivals[-1] + int(gap * 1e9))
        out.append([arrivals, text, first])
    return {"cpu_s": cpu1 - cpu0, "t_start_ns": wall0, "t_end_ns": wall1, "failed": failed[0], "turns": out}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--turns", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--sessions", default=None)
    ap.add_argument("--instances", type=int, default=256)
    a = ap.parse_args()
    work = _replayed(a.sessions, a.instances) if a.sessions else _fixed(a.concurrency, a.turns, a.tokens)
    print(json.dumps(asyncio.run(_run(a.url, a.concurrency, work))))


if __name__ == "__main__":
    main()
