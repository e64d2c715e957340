"""`trajbench demo`: the main job end to end on the bundled sample traces.

It lives at the top of the library stack (eval imports replay imports traces) because it drives
all three. Every step is the real library call a user would make; nothing is faked.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Callable

import traces
from traces.show import turn_body

Echo = Callable[[str], None]


def sample_traces() -> Path:
    """The bundled sample trace set (two coding and two workflow trajectories)."""
    return Path(str(resources.files("traces").joinpath("data/sample.jsonl")))


def run_demo(out: str, echo: Echo = print) -> Path:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = sample_traces()
    n_traj, n_turns, errors = traces.validate_sources([str(src)], "mlperf-jsonl")
    if errors:
        raise traces.TraceValidationErrors(errors)
    echo(f"[1/2] validated {src.name}: {n_traj} trajectories, {n_turns} client turns")
    shards_dir = out_dir / "shards"
    result = traces.build_shards([str(src)], shards_dir, traces.BuildOptions(name="sample"), overwrite=True)
    echo(f"[2/2] built {shards_dir} (content hash {result.manifest['content_hash'][:16]}…)")
    body = turn_body(str(shards_dir), "sim_001", 1, 3, traces.get_profile("kimi-k3"))
    echo("request body of sim_001 turn 3:")
    echo(json.dumps(body, indent=2, ensure_ascii=False)[:1500])
    return out_dir
