"""`traces stats`: what a built dataset asks of a server — lengths, context growth, delays, reuse.

One pass over the shards collects per-turn facts (ISL, delta, expected OSL, delay) and each salt
mode's block-hash streams (`reuse`); the numbers are then pure functions of those.
Lengths are in tokens when the shards carry token columns or a tokenizer is given, else in
characters of the canonical prompt (the documented fallback unit "chars"). Percentiles take an
observed value (numpy `method="lower"`, as docs/metrics.md). The result is the typed `Stats`
(`statsfile`), written as `stats.json` with sorted keys and rounded floats so the same shards give
the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import TraceError
from ..parallel import check_jobs, ordered_map
from ..progress import Progress
from ..requests import SALT_MODES
from ..shards import Shards
from .cache import ideal_reuse, lru_curve
from .lengths import Facts, TurnLengths, domain_tables, growth
from .reuse import (
    MAX_BLOCK_SIZE,
    InstanceStream,
    encode_units,
    instance_streams,
    plan_within,
    prompt_plan,
    salted_system,
    system_segment,
)
from .statsfile import (
    ExactReuse,
    Lru,
    LruPoint,
    Reuse,
    ReuseFailed,
    Stats,
    StatsDataset,
    StatsSettings,
    Units,
)

T = TypeVar("T")

#: Salt modes compared by the reuse analysis, official first.
REUSE_MODES = ("mlperf", "strong", "none")


@dataclass(frozen=True)
class StatsOptions:
    block_size: int = 64
    concurrency: int = 32
    #: LRU cache sizes in units; empty = `default_cache_sizes` (ten doublings up to "holds all").
    cache_sizes: tuple[int, ...] = ()
    salt_modes: tuple[str, ...] = REUSE_MODES

    def check(self) -> None:
        if not 1 <= self.block_size <= MAX_BLOCK_SIZE:
            raise TraceError(f"--block-size must be between 1 and {MAX_BLOCK_SIZE}, got {self.block_size}")
        if self.concurrency < 1:
            raise TraceError(f"--concurrency must be >= 1, got {self.concurrency}")
        bad = [m for m in self.salt_modes if m not in SALT_MODES]
        if bad:
            raise TraceError(f"unknown salt mode(s) {bad}; choose from {', '.join(SALT_MODES)}")
        if any(c < self.block_size for c in self.cache_sizes):
            raise TraceError(f"every cache size must hold at least one block ({self.block_size} units)")


def _encoder_and_counter(sh: Shards, tokenizer: Any | None) -> tuple[str, Callable[[str], Any], Any | None]:
    """(reuse unit, segment encoder, counter for missing token columns)."""
    if tokenizer is not None:
        return "tokens", tokenizer.encode, tokenizer
    tok = sh.manifest.tokenizer
    if tok:
        try:
            from ..tokenizers import load_tokenizer

            loaded = load_tokenizer(tok.name)
            return "tokens", loaded.encode, None
        except TraceError:  # the build's tokenizer needs a path we do not have: reuse falls back to chars
            pass
    return "chars", _identity, None


def _identity(text: str) -> str:
    return text


@dataclass(frozen=True)
class _Pass:
    """What the pass needs for every instance (sent once to each `--jobs` worker)."""

    shards_dir: str
    tokenizer: Any | None
    opts: StatsOptions


@dataclass(frozen=True)
class _InstanceFacts:
    """One instance's share of the pass: its per-turn lengths, each salt mode's block streams
    (or why the mode cannot be salted), and its exact within-trajectory reuse."""

    domain: str
    trajectory_id: str
    turns: tuple[tuple[int, int, int, int | None, float], ...]  # index, isl, delta, osl, delay
    streams: dict[str, InstanceStream]
    errors: dict[str, str]
    within: tuple[int, int]


class _Measure:
    """The per-instance work of the pass, over one open shard folder."""

    def __init__(self, p: _Pass) -> None:
        self.sh = Shards(p.shards_dir)
        self.opts = p.opts
        self.unit, self.encode, self.counter = _encoder_and_counter(self.sh, p.tokenizer)
        built = self.sh.manifest.tokenizer
        self.columns_ok = self.counter is None or (
            built is not None and built.fingerprint == getattr(self.counter, "fingerprint", None)
        )
        self.seed = self.sh.options.seed

    def __call__(self, k: int, skip: frozenset[str] = frozenset()) -> _InstanceFacts:
        """Instance `k`; modes in `skip` already failed to salt (no need to try again)."""
        encode = self.encode
        inst = self.sh.instance(k)
        lengths = TurnLengths(self.counter, self.columns_ok and inst.turns[0].isl_tokens is not None)
        plan = prompt_plan(self.sh, inst, lengths)
        turns = tuple(
            (row.client_turn_index, isl, delta, osl, row.delay_seconds)
            for row, (isl, delta, osl) in zip(inst.turns, lengths.rows, strict=True)
        )
        # each segment is encoded once; the salt modes differ only in the system segment
        encoded = [[encode_units(encode, text) for text in new] for _, new in plan.steps]
        systems: dict[str, np.ndarray | None] = {}
        errors: dict[str, str] = {}
        for mode in self.opts.salt_modes:
            if mode in skip:
                continue
            try:
                text = salted_system(plan, mode, self.seed)
            except TraceError as exc:  # a trajectory without system prompt cannot be salted
                errors[mode] = str(exc)
                continue
            systems[mode] = None if text is None else encode_units(encode, system_segment(text))
        streams = instance_streams(plan, encoded, self.opts.block_size, systems)
        stored = len(encode_units(encode, system_segment(plan.stored_system))) if plan.stored_system else 0
        within = plan_within(plan, [[len(a) for a in arrays] for arrays in encoded], stored)
        return _InstanceFacts(plan.domain, inst.trajectory_id, turns, streams, errors, within)


_worker: dict[str, _Measure] = {}


def _job_setup(p: _Pass) -> None:
    _worker["measure"] = _Measure(p)


def _job(k: int) -> _InstanceFacts:
    return _worker["measure"](k)


def compute_stats(
    shards_dir: str | Path,
    *,
    tokenizer: Any | None = None,
    options: StatsOptions | None = None,
    progress: Progress | None = None,
    jobs: int = 1,
) -> Stats:
    """All statistics of a shard folder (see module docstring). `progress`
    counts the client turns read, then the cache sizes of the LRU curve. `jobs` processes
    measure the instances (`traces.parallel`); the result is the same for any number."""
    opts = options or StatsOptions()
    opts.check()
    check_jobs(jobs)
    p = _Pass(str(shards_dir), tokenizer, opts)
    measure = _Measure(p)
    sh = measure.sh
    unit = measure.unit
    length_unit = "tokens" if (measure.counter is not None or sh.manifest.tokenizer) else "chars"
    facts = Facts()
    streams: dict[str, list[InstanceStream]] = {m: [] for m in opts.salt_modes}
    errors: dict[str, str] = {}
    within = [0, 0]  # exact message-level (reused, total) under the build's salt
    if progress is not None:
        progress.set_total(sh.manifest.counts.client_turns)
    if jobs == 1:
        results: Iterator[_InstanceFacts] = (measure(k, frozenset(errors)) for k in range(len(sh)))
    else:
        results = ordered_map(_job, range(len(sh)), jobs, initializer=_job_setup, initargs=(p,))
    for res in results:  # folded in instance order, whichever process measured it
        dom = res.domain
        facts.instances[dom].append(len(res.turns))
        facts.trajectories[dom].add(res.trajectory_id)
        for index, isl, delta, osl, delay in res.turns:
            facts.domain.append(dom)
            facts.index.append(index)
            facts.isl.append(isl)
            facts.delta.append(delta)
            facts.osl.append(osl)
            facts.delay.append(delay)
        for mode in opts.salt_modes:  # a mode that failed once is dropped from then on
            if mode in res.errors and mode not in errors:
                errors[mode] = res.errors[mode]
            elif mode in res.streams and mode not in errors:
                streams[mode].append(res.streams[mode])
        within[0] += res.within[0]
        within[1] += res.within[1]
        if progress is not None:
            progress.advance(len(res.turns))
    sh.close()
    return Stats(
        dataset=StatsDataset(
            sh.manifest.name, sh.content_hash, sh.options.salt, sh.history_marker, sh.manifest.tokenizer
        ),
        units=Units(length_unit, unit),
        options=StatsSettings(opts.block_size, opts.concurrency),
        domains=domain_tables(facts),
        growth=growth(facts),
        reuse=_reuse(streams, errors, opts),
        reuse_exact_within=ExactReuse(unit, within[0], within[1], _frac(*within)),
        lru=_lru(streams, errors, sh.options.salt, opts, progress),
    )


def _reuse(
    streams: dict[str, list[InstanceStream]], errors: dict[str, str], opts: StatsOptions
) -> dict[str, dict[str, Reuse] | ReuseFailed]:
    out: dict[str, dict[str, Reuse] | ReuseFailed] = {}
    for mode in opts.salt_modes:
        if mode in errors:
            out[mode] = ReuseFailed(errors[mode])
            continue
        acc = ideal_reuse(streams[mode], opts.block_size, opts.concurrency)
        out[mode] = {
            dom: Reuse(
                units=a["units"],
                within=_frac(a["within"], a["units"]),
                cross=_frac(a["cross"], a["units"]),
                ideal=_frac(a["within"] + a["cross"], a["units"]),
            )
            for dom, a in sorted(acc.items())
        }
    return out


@dataclass(frozen=True)
class Lost:
    """What one salt mode costs an ideal prefix cache in one domain, against no salting: `lost`,
    the input units it must compute that no salting reuses (misses with the salt minus misses
    without; the salt's own text counts), and `cross_lost`, the reuse across trajectories the
    salt removes."""

    lost: float
    cross_lost: float


def reuse_lost(
    reuse: Mapping[str, dict[str, Reuse] | ReuseFailed], baseline: str = "none"
) -> dict[str, dict[str, Lost]]:
    """What each salt mode of `Stats.reuse` costs an ideal prefix cache, per domain, against
    `baseline` (no salting); empty when the baseline was not analysed."""
    base = reuse.get(baseline)
    if not isinstance(base, dict):
        return {}
    out: dict[str, dict[str, Lost]] = {}
    for mode, by_dom in reuse.items():
        if mode == baseline or isinstance(by_dom, ReuseFailed):
            continue
        out[mode] = {
            dom: Lost(_missed(r) - _missed(base[dom]), base[dom].cross * base[dom].units - r.cross * r.units)
            for dom, r in by_dom.items()
            if dom in base
        }
    return out


def _missed(r: Reuse) -> float:
    """Input units an ideal prefix cache must compute (the ones it cannot reuse)."""
    return (1 - r.ideal) * r.units


def _frac(a: int, b: int) -> float:
    return round(a / b, 6) if b else 0.0


def default_cache_sizes(distinct_units: int, block_size: int, points: int = 10) -> list[int]:
    """Doubling powers of two ending at the first one that holds everything the dataset sends
    (`points` of them, none below one block): from thrashing to no eviction at all."""
    top = 1 << max(0, (max(distinct_units, 1) - 1).bit_length())
    sizes = [top >> k for k in range(points - 1, -1, -1)]
    return [s for s in sizes if s >= block_size] or [top]


def _lru(
    streams: dict[str, list[InstanceStream]],
    errors: dict[str, str],
    mode: str,
    opts: StatsOptions,
    progress: Progress | None = None,
) -> Lru | None:
    if mode in errors or not streams.get(mode):
        return None
    ss = streams[mode]
    sizes_per_instance = sorted((sum(len(c) for c in s.chains) * opts.block_size for s in ss), reverse=True)
    distinct = sum(sizes_per_instance)
    # no eviction is reached once the cache holds what the C users in flight have sent (plus
    # shared prefixes), so the grid tops out at twice the C largest instances, not at everything
    working_set = 2 * sum(sizes_per_instance[: opts.concurrency])
    sizes = list(opts.cache_sizes) or default_cache_sizes(min(distinct, working_set), opts.block_size)
    capacities: list[int | None] = [*sizes, None]
    if progress is not None:
        progress.stage(f"{progress.label} LRU", total=len(capacities), unit="cache sizes")
    curve = lru_curve(ss, opts.block_size, opts.concurrency, _ticking(capacities, progress))
    return Lru(
        salt=mode,
        concurrency=opts.concurrency,
        block_size=opts.block_size,
        distinct_units=distinct,
        points=[LruPoint(c, round(h, 6)) for c, h in curve[:-1] if c is not None],
        unlimited=round(curve[-1][1], 6),
    )


def _ticking(items: list[T], progress: Progress | None) -> Iterator[T]:
    """`items`, advancing `progress` as the consumer asks for the next one (so one step per item
    it has finished with)."""
    for item in items:
        yield item
        if progress is not None:
            progress.advance()


@dataclass(frozen=True)
class StatsResult:
    stats: Stats
    files: tuple[Path, ...]


def analyse(
    shards_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    tokenizer: Any | None = None,
    options: StatsOptions | None = None,
    progress: Progress | None = None,
    jobs: int = 1,
) -> StatsResult:
    """`traces stats`: compute the statistics and, given `out_dir`, write stats.json and plots."""
    from ..outdir import make_dir
    from .plots import write_plots

    if out_dir is not None:
        make_dir(Path(out_dir))  # an unwritable --out fails before the analysis, not after it
    stats = compute_stats(shards_dir, tokenizer=tokenizer, options=options, progress=progress, jobs=jobs)
    if out_dir is None:
        return StatsResult(stats, ())
    return StatsResult(stats, (stats.write(out_dir), *write_plots(stats, out_dir)))
