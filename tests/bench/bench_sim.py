"""Benchmark: how many tokens per second the simulator streams per CPU core at zero latency.

The simulator is the target of the replay engine's calibration, so it must never be the
bottleneck. This starts it (zero modelled latency) in a child process, streams fixed-length
answers with C concurrent lean aiohttp readers (they count `data:` events, no JSON), and prints
wall-clock tokens/s and the simulator's own CPU time from /proc, i.e. tokens per server CPU
second (= tokens/s per core it would sustain with a core to itself).

    .venv/bin/python tests/bench/bench_sim.py --concurrency 128 --requests 1024 --tokens 256
    .venv/bin/python tests/bench/bench_sim.py --latency --tokens 64   # TTFT/ITL vs load, default model
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import time

import aiohttp

from replay.sim import SimConfig, start_simulator


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(
    url: str, concurrency: int, requests: int, tokens: int, prompt_chars: int, stamped: bool = False
) -> tuple[int, int]:
    queue = list(range(requests))
    events = errors = 0
    headers = {"X-Sim-Timestamps": "1"} if stamped else {}

    async def slot(session: aiohttp.ClientSession) -> None:
        nonlocal events, errors
        while queue:
            i = queue.pop()
            body = {
                "model": "bench",
                "stream": True,
                "max_completion_tokens": tokens,
                "messages": [
                    {"role": "system", "content": f"bench {i}"},
                    {"role": "user", "content": "x" * prompt_chars},
                ],
            }
            async with session.post(url + "/v1/chat/completions", json=body, headers=headers) as r:
                if r.status != 200:
                    errors += 1
                    continue
                tail = b""
                async for chunk in r.content.iter_any():
                    data = tail + chunk  # a marker split across reads is completed (and counted) here
                    events += data.count(b"data: ")
                    tail = data[-5:]  # too short to hold a whole marker, so nothing is counted twice

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        await asyncio.gather(*(slot(session) for _ in range(concurrency)))
    return events, errors


async def latencies(
    url: str, concurrency: int, requests: int, tokens: int, prompt_chars: int
) -> tuple[list[float], list[float]]:
    """Client-side TTFT and mean inter-chunk gap per request (seconds), under the latency model."""
    queue = list(range(requests))
    ttfts: list[float] = []
    itls: list[float] = []

    async def slot(session: aiohttp.ClientSession) -> None:
        while queue:
            i = queue.pop()
            body = {
                "model": "bench",
                "stream": True,
                "max_completion_tokens": tokens,
                "messages": [
                    {"role": "system", "content": f"latency {i}"},
                    {"role": "user", "content": "x" * prompt_chars},
                ],
            }
            t0 = time.perf_counter()
            times = []
            async with session.post(url + "/v1/chat/completions", json=body) as r:
                async for line in r.content:
                    if line.startswith(b"data: ") and b'"content"' in line:
                        times.append(time.perf_counter())
            ttfts.append(times[0] - t0)
            itls.append((times[-1] - times[0]) / (len(times) - 1))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        await asyncio.gather(*(slot(session) for _ in range(concurrency)))
    return ttfts, itls


def latency_table(args: argparse.Namespace) -> None:
    """TTFT and ITL as load grows, with the default (mid-size GPU) step model: they must react."""
    print(
        f"latency model (defaults: {SimConfig().step_base_ms} ms + {SimConfig().prefill_ms_per_token} ms/prefill token + "
        f"{SimConfig().batch_ms_per_seq} ms/sequence per step), prompt {args.prompt_chars} chars, {args.tokens}-token answers"
    )
    with start_simulator(SimConfig(osl_mean=args.tokens * 4, osl_cv=0.0)) as sim:
        for c in (1, 8, 32, 128):
            ttfts, itls = asyncio.run(latencies(sim.base_url, c, max(c, 2 * c), args.tokens, args.prompt_chars))
            ttfts.sort()
            itls.sort()
            print(
                f"  C={c:<4} median TTFT {1e3 * ttfts[len(ttfts) // 2]:8.1f} ms   median ITL {1e3 * itls[len(itls) // 2]:6.1f} ms"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--requests", type=int, default=1024)
    ap.add_argument("--tokens", type=int, default=256, help="answer length (fixed)")
    ap.add_argument("--prompt-chars", type=int, default=2000)
    ap.add_argument("--stamped", action="store_true", help="ask for X-Sim-Timestamps (calibration mode)")
    ap.add_argument(
        "--latency", action="store_true", help="instead: TTFT/ITL vs concurrency under the default latency model"
    )
    args = ap.parse_args()
    if args.latency:
        latency_table(args)
        return
    config = SimConfig(
        step_base_ms=0.0,
        prefill_ms_per_token=0.0,
        batch_ms_per_seq=0.0,
        osl_mean=args.tokens * 4,
        osl_cv=0.0,
        cache_tokens=None,
    )
    with start_simulator(config) as sim:
        pid = sim.process.pid
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        c0 = resource.getrusage(resource.RUSAGE_SELF)
        events, errors = asyncio.run(
            drive(sim.base_url, args.concurrency, args.requests, args.tokens, args.prompt_chars, args.stamped)
        )
        wall = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_SELF)
        server_cpu = cpu_seconds(pid) - cpu0
    client_cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    tokens = args.requests * args.tokens
    print(
        f"simulator benchmark: C={args.concurrency}, {args.requests} requests x {args.tokens} tokens, prompt {args.prompt_chars} chars, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}{', timestamps on' if args.stamped else ''}"
    )
    print(
        f"  SSE events read        {events} (expected {args.requests * (args.tokens + 3)}: role + tokens + finish + [DONE]; errors {errors})"
    )
    print(
        f"  wall                   {wall:.2f} s -> {tokens / wall:,.0f} tokens/s, {args.requests / wall:,.1f} requests/s"
    )
    print(
        f"  simulator CPU          {server_cpu:.2f} s -> {tokens / server_cpu:,.0f} tokens per simulator CPU-second (tokens/s per core)"
    )
    print(f"  client CPU             {client_cpu:.2f} s -> {client_cpu / args.requests * 1000:.2f} ms per request")


if __name__ == "__main__":
    main()
