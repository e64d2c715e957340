"""The paced phase's client CPU (prints figures, asserts nothing): our streaming client against
the calibration server pacing every stream like an engine (one chunk per tick), C slots.

    .venv/bin/python tests/bench/bench_paced.py [--tick-ms 5] [--tokens 64] [--turns 1024]
        [--concurrency 128] [--repeat 3] [--profile] [--fold all|no-framed-text|rules-only]

Each chunk then arrives in its own socket read, as from a real engine, so CPU per turn is the
per-chunk path's cost times the tokens plus the per-turn cost (request, headers, fold). CPU is
`time.process_time()` of this process over the turns, connection set-up included. `--profile`
prints cProfile's top functions by own time for the last repeat. `--fold` switches the SSE fold's
shortcuts off (`replay.client.sse`: `_framed_text`, then `_one_event` too), to see what each
pays on this workload. Figures are noisy on a shared machine: compare runs made side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time

from replay.calibrate.run import _drive_ours, _Server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tick-ms", type=float, default=5.0, help="server tick: one chunk per stream per tick")
    ap.add_argument("--tokens", type=int, default=64, help="mean chunks per turn")
    ap.add_argument("--turns", type=int, default=1024)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile the last repeat")
    ap.add_argument("--fold", choices=("all", "no-framed-text", "rules-only"), default="all")
    args = ap.parse_args()
    if args.fold != "all":
        from replay.client.sse import ChatStream

        ChatStream._framed_text = lambda self, data, t_ns: False  # type: ignore[method-assign]
        if args.fold == "rules-only":
            ChatStream._one_event = lambda self, data, t_ns: False  # type: ignore[method-assign]
    cmd = (
        f"tests/bench/bench_paced.py --tick-ms {args.tick_ms:g} --tokens {args.tokens} --turns {args.turns} "
        f"--concurrency {args.concurrency} --fold {args.fold}"
    )
    with _Server(args.tokens, args.tick_ms / 1000) as srv:
        for k in range(args.repeat):
            prof = cProfile.Profile() if args.profile and k == args.repeat - 1 else None
            if prof is not None:
                prof.enable()
            cpu0 = time.process_time()
            res = asyncio.run(_drive_ours(srv.url, args.concurrency, args.turns, args.tokens, "fast"))
            cpu = time.process_time() - cpu0
            if prof is not None:
                prof.disable()
            turns = len(res["turns"])
            chunks = sum(len(ns) for ns, _ in res["turns"])
            print(
                f"paced: {turns} turns, {chunks / turns:.1f} chunks/turn, failed {res['failed']}: "
                f"{1e3 * cpu / turns:.3f} ms CPU/turn, {1e6 * cpu / chunks:.1f} µs CPU/chunk (per-turn cost included)"
                f"{' [profiled]' if prof else ''}  [{cmd}]"
            )
            if prof is not None:
                pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
