"""Drive agentic-bench's streaming client against the calibration server (run by path, standalone).

Not imported by trajbench: `replay.calibrate` runs this file with an interpreter where the
`agentic-bench` distribution (module `abench`, aiohttp) is installed, so it imports only the
standard library, aiohttp and abench. Each turn is agentic-bench's own per-turn code path
(`abench.replay.engine._run_session`): `session.post(json=...)` on a `TCPConnector(limit=2C)`
session, then `abench.replay.transport._process_stream`. Prints one JSON object of raw facts:
client CPU and wall time, and per turn the chunk arrival times (perf_counter is CLOCK_MONOTONIC on
Linux, the server's stamp clock) and the server stamps carried in the text.

    python _abench_driver.py URL --concurrency 128 --turns 2048 --tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import aiohttp
from abench.replay.transport import _process_stream


async def _run(url: str, concurrency: int, turns: int, tokens: int) -> dict[str, Any]:
    payload = {
        "model": "cal",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": tokens,
    }
    left = [turns]
    per_turn: list[tuple[float, list[float], str]] = []
    failed = [0]
    connector = aiohttp.TCPConnector(limit=max(concurrency * 2, 32), ssl=False)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as http:

        async def slot() -> None:
            while left[0] > 0:
                left[0] -= 1
                start = time.perf_counter()
                try:
                    async with http.post(
                        url, json=payload, headers={"X-Session-ID": "cal"}, timeout=aiohttp.ClientTimeout(total=120)
                    ) as resp:
                        text, ttft, itl, _usage = await _process_stream(resp, start)
                except Exception:
                    failed[0] += 1
                    continue
                per_turn.append((start + ttft, itl, text))

        cpu0, wall0 = time.process_time(), time.monotonic_ns()
        await asyncio.gather(*(slot() for _ in range(concurrency)))
        cpu1, wall1 = time.process_time(), time.monotonic_ns()
    out = []
    for first_s, itl, text in per_turn:
        arrivals = [int(first_s * 1e9)]
        for gap in itl:
            arrivals.append(arrivals[-1] + int(gap * 1e9))
        out.append([arrivals, text])
    return {"cpu_s": cpu1 - cpu0, "t_start_ns": wall0, "t_end_ns": wall1, "failed": failed[0], "turns": out}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--turns", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=256)
    a = ap.parse_args()
    print(json.dumps(asyncio.run(_run(a.url, a.concurrency, a.turns, a.tokens))))


if __name__ == "__main__":
    main()
