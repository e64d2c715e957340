"""`trajbench demo`: the main job end to end, offline, in about a minute.

A small synthetic trace set → validated → salted shards (with Qwen3.6 token counts) → a
concurrency sweep against the embedded simulator → inline and OSL gates per point → the Pareto
report. It lives at the top of the library stack (eval imports replay imports traces) because it
drives all three; every step is the library call a user would make, nothing is faked. Two
shortcuts keep it quick, and it says so: recorded delays are skipped, and the simulator's step
model runs 64x faster than its default. Its answers are the recorded ones (oracle mode: a perfect
model), so the accuracy gates pass and the numbers show only the serving trade-off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import traces
from replay.config import RunConfig
from replay.report import build_report
from replay.sweep import run_sweep
from traces.synth import synthesize
from traces.tokenizers import load_tokenizer

from .gates import evaluate_point

Echo = Callable[[str], None]

CONCURRENCIES = (1, 2, 4, 8)
#: The default step model (8 ms base, 0.04 ms/prefill token, 0.1 ms/sequence), 64x faster.
FAST_SIM = ("--step-base-ms", "0.125", "--prefill-ms-per-token", "0.000625", "--batch-ms-per-seq", "0.0015625")


async def run_demo(out: str, echo: Echo = print, *, scale: float = 0.01) -> Path:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "synthetic.jsonl.zst"
    made = synthesize(src, seed=0, scale=scale)
    echo(f"[1/5] synthesised {made.trajectories} trajectories ({made.coding} coding, {made.workflow} workflow), {made.client_turns} client turns -> {src}")
    n_traj, n_turns, errors = traces.validate_sources([str(src)], "mlperf-jsonl")
    if errors:
        raise traces.TraceValidationErrors(errors)
    shards_dir = out_dir / "shards"
    result = traces.build_shards([str(src)], shards_dir, traces.BuildOptions(name="demo"), counter=load_tokenizer("qwen3.6"), overwrite=True)
    echo(f"[2/5] validated and built {shards_dir}: {n_traj} trajectories, {n_turns} turns, salted (mlperf), content hash {result.manifest.content_hash[:16]}…")
    sweep_dir = out_dir / "sweep"
    echo(f"[3/5] sweeping concurrency {', '.join(map(str, CONCURRENCIES))} against the embedded simulator (oracle answers, delays skipped, 64x time-scaled) …")
    base = RunConfig(
        shards=str(shards_dir), profile="kimi-k3", concurrency=1, inject_delays=False, display=False, overwrite=True,
        sim_args=("--answers", "oracle", "--shards", str(shards_dir), *FAST_SIM),
    )

    def after_point(run_dir: Path) -> None:
        for line in evaluate_point(run_dir)[:1]:
            echo(f"      {line}")

    await run_sweep(base, CONCURRENCIES, sweep_dir, after_point=after_point, echo=lambda m: echo(f"      {m}"))
    echo("[4/5] every point scored: inline accuracy (scores.json) and the OSL gate (osl.json)")
    page = build_report([("trajbench-sim", sweep_dir)], out_dir / "report")
    echo(f"[5/5] report: {page}")
    echo("      open it in a browser; `trajbench report --help` compares several systems on one chart")
    return page
