"""Synthetic full-size dataset: generate, validate and build time and peak RSS. Prints figures.

    .venv/bin/python tests/bench/bench_synth_build.py [--scale 1.0] [--seed 0] [--tokenizer qwen3.6]

Each step runs in its own Python process (so its peak RSS is its own) inside a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STEP = """
import json, resource, sys, time
t0 = time.perf_counter()
{body}
print(json.dumps({{"seconds": time.perf_counter() - t0, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "info": info}}))
"""


def run(label: str, body: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", STEP.format(body=body)], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"{label:<28} {res['seconds']:6.1f} s work ({wall:5.1f} s with interpreter start), peak RSS {res['peak_rss_mb']:6.0f} MB  {res['info']}"
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", default="qwen3.6", help="also build with this tokenizer ('' to skip)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "synthetic.jsonl.zst"
        run(
            "synth",
            f"from traces.synth import synthesize\nr = synthesize({str(data)!r}, seed={args.seed}, scale={args.scale})\n"
            "info = f'{r.trajectories} traj, {r.client_turns} client / {r.assistant_turns} assistant turns, {r.rows} rows'",
        )
        print(f"{'':<28} file {data.stat().st_size / 1e6:.1f} MB (zstd)")
        run(
            "validate",
            f"from traces import validate_sources\nn, t, e = validate_sources([{str(data)!r}], 'mlperf-jsonl')\ninfo = f'{{n}} traj, {{t}} turns, {{len(e)}} errors'",
        )
        run(
            "build (no tokenizer)",
            f"from traces import BuildOptions, build_shards\nr = build_shards([{str(data)!r}], {str(Path(tmp) / 'shards')!r}, BuildOptions(name='synthetic'))\ninfo = r.manifest.counts",
        )
        if args.tokenizer:
            run(
                f"build (--tokenizer {args.tokenizer})",
                (
                    f"from traces import BuildOptions, build_shards\nfrom traces.tokenizers import load_tokenizer\n"
                    f"r = build_shards([{str(data)!r}], {str(Path(tmp) / 'shards-tok')!r}, BuildOptions(name='synthetic'), counter=load_tokenizer({args.tokenizer!r}))\n"
                    "info = r.manifest.counts"
                ),
            )


if __name__ == "__main__":
    main()
