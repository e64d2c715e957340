"""The input of the benchmarks: the synthetic coding set by default, any mlperf-jsonl file on request.

The default is generated (seeded `traces.synth`, coding trajectories only), so the benchmarks run
on a fresh clone; `--fixture FILE` measures another file instead, e.g. the official example at
`../shared/fixtures/mlperf_coding_20.jsonl` when it is there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

#: coding trajectories of `traces synth --seed 0 --scale 0.05`: 6 trajectories, ~1.9 MB, the size
#: of the official 20-trajectory example (long, fast-growing prompts)
SEED = 0
SCALE = 0.05


def add_argument(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--fixture",
        default=None,
        help=f"an mlperf-jsonl file to measure (default: the synthetic coding set, seed {SEED}, scale {SCALE})",
    )


def coding_source(folder: Path, fixture: str | None) -> Path:
    """`fixture` when given, else the synthetic coding set written into `folder`."""
    if fixture is not None:
        path = Path(fixture)
        if not path.is_file():
            raise SystemExit(f"fixture not found: {path}")
        return path
    import traces
    from traces.synth import iter_synthetic

    path = folder / f"synth_coding_s{SEED}_x{SCALE}.jsonl"
    writer = traces.FORMATS["mlperf-jsonl"].write
    assert writer is not None
    writer((t for t in iter_synthetic(SEED, SCALE) if t.domain == "coding"), str(path))
    return path


def coding_shards(folder: Path, fixture: str | None) -> Path:
    """Shards built from `coding_source` into `folder` (the benchmark's prompts, as a run sends them)."""
    import traces

    out = folder / "shards"
    if not (out / traces.MANIFEST).is_file():
        traces.build_shards([str(coding_source(folder, fixture))], out, traces.BuildOptions(name="bench"))
    return out
