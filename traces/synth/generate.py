"""`traces synth`: a deterministic, offline look-alike of the official dataset (docs/dataset-format.md).

At scale 1 it writes exactly 613 trajectories — 113 agentic-coding (bash tool, deep, fast-growing
context) and 500 agentic-workflow (`sim_NNN`, a large shared system prompt with dozens of tools,
shallower) — with 30,335 client turns and 30,328 assistant turns (7 trajectories end on a client
turn). `--scale X` scales the trajectory and turn counts (scale 0.02 is a tiny demo set).

The recorded answers are as long as the reference model's (docs/accuracy.md: the OSL band is built on its
mean output per turn), about 420 Qwen3.6 tokens per assistant turn counting reasoning, content
and tool-call arguments, long-tailed per turn (`text`), so a perfect model replaying the set
passes the OSL gate.

Determinism: everything is drawn from `random.Random(seed)`-derived generators (one per
trajectory, seeded from the run seed and the trajectory's index), no global state, no clock, so
the same seed and scale give the same bytes on any machine. The per-trajectory client-turn counts
are drawn first and then nudged to hit the exact totals, so the totals never depend on luck.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import TraceError
from ..formats import FORMATS
from ..model import Trajectory
from ..progress import Progress
from .coding import coding_ids, coding_trajectory
from .workflow import WorkflowWorld, workflow_trajectory

#: Facts of the official set (docs/dataset-format.md).
OFFICIAL_CODING = 113
OFFICIAL_WORKFLOW = 500
OFFICIAL_CLIENT_TURNS = 30_335
OFFICIAL_OPEN_ENDED = 7  # trajectories that end on a client turn

#: Share of the client turns that are coding turns: coding trajectories are about three times as
#: deep as workflow ones (~107 vs ~35 client turns each at scale 1).
CODING_TURN_SHARE = 0.40
CODING_MIN, CODING_MAX = 12, 400
WORKFLOW_MIN, WORKFLOW_MAX = 4, 160


@dataclass(frozen=True)
class SynthPlan:
    """How many trajectories of each domain, their client-turn counts, and which end open."""

    coding_turns: tuple[int, ...]
    workflow_turns: tuple[int, ...]
    open_ended: frozenset[int]  # indices in generation order (coding first, then workflow)

    @property
    def trajectories(self) -> int:
        return len(self.coding_turns) + len(self.workflow_turns)

    @property
    def client_turns(self) -> int:
        return sum(self.coding_turns) + sum(self.workflow_turns)

    @property
    def assistant_turns(self) -> int:
        return self.client_turns - len(self.open_ended)


@dataclass(frozen=True)
class SynthResult:
    out: str
    trajectories: int
    coding: int
    workflow: int
    client_turns: int
    assistant_turns: int
    rows: int


def _fit(raw: list[float], total: int, lo: int, hi: int) -> list[int]:
    """Integer counts proportional to `raw`, each in [lo, hi], summing exactly to `total`."""
    n = len(raw)
    if n == 0:
        return []
    total = min(max(total, lo * n), hi * n)
    s = sum(raw)
    counts = [min(hi, max(lo, round(r * total / s))) for r in raw]
    diff = total - sum(counts)
    k = 0
    # Spread the rounding remainder one turn at a time, cycling in index order (deterministic).
    while diff:
        i = k % n
        step = 1 if diff > 0 else -1
        if lo <= counts[i] + step <= hi:
            counts[i] += step
            diff -= step
        k += 1
    return counts


def plan(seed: int = 0, scale: float = 1.0) -> SynthPlan:
    if not scale > 0:
        raise TraceError(f"--scale must be > 0, got {scale}")
    rng = random.Random(f"trajbench-synth-plan:{seed}")
    n_code = max(1, round(OFFICIAL_CODING * scale))
    n_flow = max(1, round(OFFICIAL_WORKFLOW * scale))
    turns = round(OFFICIAL_CLIENT_TURNS * scale)
    code_total = round(turns * CODING_TURN_SHARE)
    code = _fit([rng.lognormvariate(0.0, 0.45) for _ in range(n_code)], code_total, CODING_MIN, CODING_MAX)
    flow = _fit([rng.lognormvariate(0.0, 0.55) for _ in range(n_flow)], turns - sum(code), WORKFLOW_MIN, WORKFLOW_MAX)
    n_open = min(round(OFFICIAL_OPEN_ENDED * scale), n_code + n_flow)
    open_ended = frozenset(rng.sample(range(n_code + n_flow), n_open))
    return SynthPlan(tuple(code), tuple(flow), open_ended)


def iter_synthetic(seed: int = 0, scale: float = 1.0) -> Iterator[Trajectory]:
    """The synthetic trajectories in file order: coding first, then workflow."""
    p = plan(seed, scale)
    ids = coding_ids(random.Random(f"trajbench-synth-ids:{seed}"), len(p.coding_turns))
    for i, (cid, n) in enumerate(zip(ids, p.coding_turns, strict=True)):
        yield coding_trajectory(
            random.Random(f"trajbench-synth-coding:{seed}:{i}"), cid, n, open_ended=i in p.open_ended
        )
    world = WorkflowWorld(random.Random(f"trajbench-synth-world:{seed}"))
    base = len(p.coding_turns)
    for j, n in enumerate(p.workflow_turns):
        yield workflow_trajectory(
            random.Random(f"trajbench-synth-workflow:{seed}:{j}"),
            world,
            f"sim_{j + 1:03d}",
            n,
            open_ended=base + j in p.open_ended,
        )


def _counted(trajectories: Iterator[Trajectory], progress: Progress | None) -> Iterator[Trajectory]:
    for traj in trajectories:
        yield traj
        if progress is not None:
            progress.advance(len(traj.client_indices()))


def synthesize(
    out: str | os.PathLike[str], *, seed: int = 0, scale: float = 1.0, progress: Progress | None = None
) -> SynthResult:
    """Write the synthetic set to `out` (mlperf-jsonl; `.zst` suffix compresses) atomically;
    `progress` counts its client turns as they are written."""
    p = plan(seed, scale)
    path = os.fspath(out)
    tmp = f"{path}.partial-{os.getpid()}" + (".zst" if path.endswith(".zst") else "")
    if progress is not None:
        progress.set_total(p.client_turns)
    try:
        rows = FORMATS["mlperf-jsonl"].write(_counted(iter_synthetic(seed, scale), progress), tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return SynthResult(
        path, p.trajectories, len(p.coding_turns), len(p.workflow_turns), p.client_turns, p.assistant_turns, rows
    )
