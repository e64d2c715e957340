"""A small seeded coding dataset for the cache-analysis tests: a few trajectories of tool calls
whose prompts grow by a few hundred tokens a turn (mlperf-jsonl, same bytes on any machine), and
a replay of it on the embedded simulator."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import replay
import traces
from replay.sim import SimConfig

#: Zero modelled latency: the tests check bookkeeping, never wait for modelled time.
ZERO: dict[str, Any] = {"step_base_ms": 0.0, "prefill_ms_per_token": 0.0, "batch_ms_per_seq": 0.0}

SYSTEM = "You are a careful software engineer. Use the bash tool to inspect and fix the repository."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a bash command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]
WORDS = "alpha beta gamma delta widget parser buffer index token cache block route replica session".split()


def write_dataset(path: Path, *, conversations: int, turns: int, delay: float = 0.0, seed: int = 7) -> Path:
    """`conversations` trajectories of `turns` client turns each (a user turn, then tool results)."""
    rng = random.Random(seed)
    lines = []
    for c in range(conversations):
        cid = f"repo__issue-{c:03d}"
        t = 1
        lines.append(
            {
                "conversation_id": cid,
                "turn": t,
                "role": "user",
                "content": f"Fix issue {c}: " + " ".join(rng.choice(WORDS) for _ in range(40)),
                "system": SYSTEM,
                "tools": TOOLS,
            }
        )
        for k in range(turns - 1):
            call = f"functions.bash:{k}"
            lines.append(
                {
                    "conversation_id": cid,
                    "turn": t + 1,
                    "role": "assistant",
                    "reasoning_content": " ".join(rng.choice(WORDS) for _ in range(12)),
                    "tool_calls": [
                        {
                            "id": call,
                            "type": "function",
                            "function": {"name": "bash", "arguments": json.dumps({"command": f"grep -n x f{k}.py"})},
                        }
                    ],
                }
            )
            row = {
                "conversation_id": cid,
                "turn": t + 2,
                "role": "tool",
                "tool_results": [{"tool_call_id": call, "content": " ".join(rng.choice(WORDS) for _ in range(150))}],
            }
            if delay:
                row["delay_seconds"] = delay
            lines.append(row)
            t += 2
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def build(tmp: Path, *, salt: str = "mlperf", **kw: object) -> Path:
    src = write_dataset(tmp / "cache.jsonl", **kw)  # type: ignore[arg-type]
    out = tmp / "shards"
    traces.build_shards([str(src)], out, traces.BuildOptions(name="cache", salt=salt))
    return out


def replay_on_sim(
    shards: Path, out: Path, *, concurrency: int, delays: bool = False, trajectories: int | None = None, **sim: Any
) -> Path:
    """A run of the shards on the simulator counting with the run's tokenizer, replica header kept
    (`trajectories` past the stored instances replays cycled, re-salted repeats)."""
    config = SimConfig(answers="synthetic", osl_mean=24, osl_cv=0.0, **{"tokenizer": "qwen3.6", **ZERO, **sim})
    run = replay.RunConfig(
        shards=str(shards),
        profile="qwen3.6-35b-a3b",
        concurrency=concurrency,
        num_trajectories=trajectories,
        inject_delays=delays,
        out=str(out),
        sim=config,
        replica_header="X-Sim-Replica",
        progress="none",
    )
    return asyncio.run(replay.run_replay(run))
