"""`trajbench replay run`: one closed-loop replay, from shards to a finished run folder.

`run_replay` checks everything it can before it touches the run folder: the options, the shards,
the open-file limit the concurrency needs (`replay.loop.limits`), then the endpoint (the embedded
simulator is started when none is given) with `replay.engine.preflight`, asks the engine who it is
(`probe_engine`) and, with `--flush-cache`, empties its prefix cache (refused where the engine has
no reset, docs/audits.md). Only then does it prepare the folder, write `run.json` (with the target:
real, or simulated and how that was recognised, the engine's identity and the reset), run
the slots (in-process, in worker processes or on Ray actors, docs/ray.md) with their status on stderr (`--progress`), write every record as its
turn finishes, and end with `result_summary.json`, `report.txt` and the records compressed
(`records.jsonl.zst`). Ctrl-C (or SIGTERM) stops
issuing and lets in-flight turns finish for `drain_timeout` seconds, then cancels them; a second
Ctrl-C cancels at once. The results are written either way, and result_summary.json says the run
was interrupted. Shard files are verified against their manifest before anything is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import traces
from traces import Shards

from .client import Connections, current_loop
from .config import RunConfig, max_idle_of, recorded_options, slots_of_worker, turn_timeout_of
from .engine import CacheMetrics, Target, flush_prefix_cache, identify, preflight, probe_engine, scrape
from .errors import ReplayError
from .loop import (
    Backend,
    Coordinator,
    Interrupt,
    LocalBackend,
    ProcessBackend,
    WorkerPlan,
    ensure_open_files,
    load_counter,
    max_stored_repeat,
    open_client,
)
from .report import RunState, run_progress
from .results import (
    EMBEDDED_EVIDENCE,
    LOCK_FILE,
    RECORDS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    CacheFlush,
    DatasetRef,
    EngineIdentity,
    Preflight,
    RecordWriter,
    RunInfo,
    ShardCheck,
    compress_records,
    folder_lock,
    refuse_if_in_use,
    write_results,
    write_seal,
)
from .sim import SimConfig

RUNS_ROOT = "trajbench-runs"
#: The `writer` of the files a run seals (seal.json).
SEAL_WRITER = "replay run"


async def run_replay(
    config: RunConfig, *, client_factory: Callable[[WorkerPlan], Any] | None = None, interrupt: Interrupt | None = None
) -> Path:
    """Run one replay and return its run folder. `client_factory` (in-process runs only) replaces
    the HTTP client, e.g. with one over a test transport; the endpoint is then not checked.
    `interrupt` is the caller's signal handling (a sweep's, installed across its points); without
    one the run installs its own. Whether a signal cut the run short is recorded in
    result_summary.json (`RunOutcome`)."""
    if interrupt is not None:
        return await _run_replay(config, client_factory, interrupt)
    own = Interrupt()
    with own.installed():
        return await _run_replay(config, client_factory, own)


async def _run_replay(
    config: RunConfig, client_factory: Callable[[WorkerPlan], Any] | None, interrupt: Interrupt
) -> Path:
    config.check()
    shards = Shards(config.shards)
    # a tampered or corrupt shard never reaches the wire: each file is read once, hashed, and
    # from then on read from those bytes (by this process's slots; worker processes read the files)
    verification = traces.verify_shards(shards)
    profile = traces.get_profile(config.profile)
    num = config.num_trajectories if config.num_trajectories is not None else len(shards)
    if client_factory is not None and (config.workers > 1 or config.backend != "auto"):
        raise ReplayError("a custom client works only in-process; use --workers 1")
    if config.backend == "ray":
        from .loop import import_ray

        import_ray()  # not installed: told before anything starts
    counter = load_counter(config.tokenizer, profile)  # a bad --tokenizer fails before anything starts
    ensure_open_files(config.concurrency, config.workers)
    run_dir = run_dir_of(config)  # checked now, created only once the endpoint has passed
    per_instance = instance_turns(shards)  # every shard footer, parsed once (the slots reuse them)
    state = RunState(total_turns=planned_turns(per_instance, num))
    lengths = trajectory_turns(shards, per_instance)
    coordinator = Coordinator(num, stop_at_window_end=config.stop_at_window_end)
    sim = embedded_simulator(config, shards, num)
    started = crashed = False
    connections: Connections | None = None
    hold = contextlib.ExitStack()  # the folder's lock, from before it is written until it is sealed
    try:
        async with _endpoint(config, sim) as (base_url, target):
            engine: EngineIdentity | None = None
            flushed: CacheFlush | None = None
            if client_factory is None:
                target = await _check_target(config, profile, base_url, target)
                # who the engine is (the same-model audit), then, when asked, its prefix cache
                # emptied after the preflight's own request and before the first turn (docs/audits.md)
                engine = await asyncio.to_thread(probe_engine, base_url, api_key=config.api_key)
                if config.flush_cache:
                    flushed = await asyncio.to_thread(flush_prefix_cache, base_url, engine, api_key=config.api_key)
            elif config.flush_cache:
                raise ReplayError("--flush-cache asks the engine itself, which a custom client does not reach")
            prepare_run_dir(config, run_dir, hold=hold)
            info = run_info(
                config,
                shards,
                profile,
                base_url,
                target,
                num,
                verification=verification,
                simulator=sim,
                per_instance=per_instance,
                engine=engine,
                cache_flush=flushed,
            )
            info.write(run_dir)
            started = True
            # the endpoint's prefix-cache counters around the run (docs/cache.md); never fatal
            before = await scrape(base_url, api_key=config.api_key) if client_factory is None else None
            if before is not None:
                CacheMetrics(before, None).write(run_dir)
            plans = [
                WorkerPlan(
                    worker=w,
                    slots=slots_of_worker(config.concurrency, config.workers, w),
                    shards=str(shards.path),
                    profile=profile,
                    base_url=base_url,
                    model=target.model.name if target.model is not None else config.model,
                    inject_delays=config.inject_delays,
                    turn_timeout=turn_timeout_of(config, profile),
                    max_idle_s=max_idle_of(config, profile),
                    headers=tuple(config.headers),
                    tokenizer=config.tokenizer,
                    api_key=config.api_key,
                    max_completion_tokens=config.max_completion_tokens,
                    limits=config.limits,
                    reuse_connections=target.keep_alive is not False,
                    replica_header=config.replica_header,
                    instances=num,
                )
                for w in range(config.workers)
            ]
            with RecordWriter(run_dir) as writer:
                backend: Backend | None = None
                progress = run_progress(
                    state,
                    lambda: backend.status() if backend is not None else (0, 0),
                    concurrency=config.concurrency,
                    window_closed=lambda: coordinator.window_close_ns is not None,
                    mode=config.progress,
                )

                def sink(record: Any) -> None:
                    writer.write(record)
                    state.add(record)
                    progress.advance()

                backend = _backend(config, plans, coordinator, sink, client_factory, counter, shards)
                try:
                    with progress:
                        await _drive(backend, config.drain_timeout, state, interrupt)
                finally:
                    connections = backend.connections()
                    ray_info = getattr(backend, "info", None)
                    if ray_info is not None:  # where the Ray workers ran and their clocks
                        replace(info, ray=ray_info()).write(run_dir)
                if before is not None:
                    CacheMetrics(before, await scrape(base_url, api_key=config.api_key)).write(run_dir)
    except BaseException:
        crashed = True
        raise
    finally:
        with hold:
            if started:  # else nothing ran (the simulator did not start, the preflight failed)
                _finish(run_dir, coordinator, state, crashed, connections, lengths)
    return run_dir


def _backend(
    config: RunConfig,
    plans: list[WorkerPlan],
    coordinator: Coordinator,
    sink: Callable[[Any], None],
    client_factory: Callable[[WorkerPlan], Any] | None,
    counter: Any,
    shards: Shards,
) -> Backend:
    """In-process for one worker (unless a backend is named), else processes, or Ray actors.
    In-process, the slots read the run's `shards` (verified, footers parsed); elsewhere each
    worker opens the folder itself, and the bytes held here are let go."""
    if config.workers == 1 and config.backend == "auto":
        return LocalBackend(
            plans[0],
            coordinator,
            sink,
            client_factory=client_factory or open_client,
            counter=counter,
            shards=shards,
        )
    shards.close()
    if config.backend == "ray":
        from .loop import RayBackend

        return RayBackend(
            plans,
            coordinator,
            sink,
            address=config.ray_address or "auto",
            resource=config.ray_resource,
            min_workers=config.min_workers,
        )
    return ProcessBackend(plans, coordinator, sink)


def _finish(
    run_dir: Path,
    coordinator: Coordinator,
    state: RunState,
    crashed: bool,
    connections: Connections | None,
    lengths: dict[str, int],
) -> None:
    """The result files, also after a crash (what finished is worth reading), then the records
    compressed and the folder sealed (`seal.json`, the last file written); a failure to write
    them never hides the crash that brought us here."""
    if not (run_dir / RUN_FILE).is_file() or not (run_dir / RECORDS_FILE).is_file():
        return  # nothing ran (e.g. the simulator did not start)
    try:
        write_results(
            run_dir,
            window_close_ns=coordinator.window_close_ns,
            interrupted=state.interrupted,
            crashed=crashed,
            connections=connections,
            trajectory_turns=lengths,
        )
        compress_records(run_dir)
        write_seal(run_dir, SEAL_WRITER)
    except Exception:
        if not crashed:
            raise


async def _drive(backend: Backend, drain_timeout: float, state: RunState, interrupt: Interrupt) -> None:
    """Run the backend; the first SIGINT/SIGTERM drains, a second (or the drain timeout) cancels.
    A signal that came before the first turn (while the simulator started) issues nothing."""
    if interrupt.requested:
        state.interrupted = True
        return
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle | None = None

    def on_signal(count: int) -> None:
        nonlocal timer
        if state.interrupted:
            backend.stop(cancel=True)
            return
        state.interrupted = True
        backend.stop(cancel=False)
        timer = loop.call_later(drain_timeout, lambda: backend.stop(cancel=True))

    try:
        with interrupt.listening(on_signal):
            await backend.run()
    finally:
        if timer is not None:
            timer.cancel()


def embedded_simulator(config: RunConfig, shards: Shards, num: int) -> SimConfig | None:
    """The settings of the simulator the run starts (None: it has an --endpoint): `config.sim`,
    else the simulator's defaults; oracle answers recognise every repeat the run replays (past
    the shards' own, replay re-salts each cycle over them as a new repeat)."""
    if config.endpoint is not None:
        return None
    sim = config.sim or SimConfig()
    cycles = -(-num // len(shards))
    needed = max_stored_repeat(shards) * cycles
    if sim.answers == "oracle" and needed > sim.oracle_repeats:
        sim = replace(sim, oracle_repeats=needed)
    return sim


@contextlib.asynccontextmanager
async def _endpoint(config: RunConfig, sim: SimConfig | None) -> AsyncIterator[tuple[str, Target]]:
    """(base URL, target): the given endpoint (taken as real until `_check_target` says
    otherwise), or the embedded simulator for the run."""
    if config.endpoint is not None:
        yield config.endpoint, Target("real", None)
        return
    try:
        from .sim import start_simulator
    except ImportError:
        raise ReplayError(
            "no --endpoint given and this trajbench has no embedded simulator; pass --endpoint URL"
        ) from None
    with start_simulator(sim) as handle:
        yield handle.base_url, Target("simulated", EMBEDDED_EVIDENCE)


async def _check_target(config: RunConfig, profile: traces.Profile, base_url: str, given: Target) -> Target:
    """The preflight checks (unless skipped), and what the server says it is, whatever was asked."""
    if config.skip_preflight:
        found = await identify(base_url, api_key=config.api_key, profile=profile, model=config.model)
    else:
        found = await preflight(
            base_url,
            profile=profile,
            model=config.model,
            api_key=config.api_key,
            limits=config.limits,
            turn_timeout=turn_timeout_of(config, profile),
        )
    if given.kind == "simulated":  # the embedded simulator: known without asking
        return replace(found, kind="simulated", evidence=given.evidence)
    return found


def run_dir_of(config: RunConfig) -> Path:
    """The run folder `prepare_run_dir` will use, checked but not created: given, or a fresh
    `trajbench-runs/<UTC time>-c<C>`. An existing non-empty folder is refused unless `overwrite`,
    and even then only if it is a run folder, and never while another run writes it (its lock)."""
    if config.out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        base = Path(RUNS_ROOT) / f"{stamp}-c{config.concurrency}"
        path, k = base, 1
        while path.exists():
            k += 1
            path = base.with_name(f"{base.name}-{k}")
    else:
        path = Path(config.out)
    if path.exists() and not path.is_dir():
        raise ReplayError(f"--out {path}: is a file; pass a folder")
    if path.is_dir():
        refuse_if_in_use(path)
        _check_reusable(config, path)
    traces.check_writable(path, error=ReplayError)
    return path


def _check_reusable(config: RunConfig, path: Path) -> None:
    """An existing folder is written only when empty (a lock file a dead run left aside), or
    with `overwrite` when it is a run folder."""
    if any(child.name != LOCK_FILE for child in path.iterdir()):
        if not config.overwrite:
            raise ReplayError(f"--out {path}: folder exists and is not empty; pass another --out or --overwrite")
        if not (path / RUN_FILE).is_file():
            raise ReplayError(
                f"--out {path}: not a run folder (no {RUN_FILE}); refusing to overwrite it, pass another --out"
            )


def prepare_run_dir(config: RunConfig, path: Path | None = None, *, hold: contextlib.ExitStack | None = None) -> Path:
    """Create the run folder (`run_dir_of`) and take its lock into `hold` (kept until the caller
    closes it: after the seal), then check it again under the lock (a run that started meanwhile
    may have written it) and empty an old run's files when `overwrite`."""
    path = run_dir_of(config) if path is None else path
    traces.make_dir(path, error=ReplayError)
    if hold is not None:
        hold.enter_context(folder_lock(path))
    _check_reusable(config, path)
    if config.overwrite:
        for child in path.iterdir():
            if child.is_file() and child.name != LOCK_FILE:
                child.unlink()
        (path / SUMMARY_FILE).unlink(missing_ok=True)  # in performance/, where the reference reads it
    return path


def planned_turns(per_instance: Sequence[int], num_instances: int) -> int:
    """Client turns the FIFO will offer over `num_instances`, cycling over the stored instances'
    turn counts (`instance_turns`, read once by the caller: every footer is a file read)."""
    m = len(per_instance)
    return sum(per_instance) * (num_instances // m) + sum(per_instance[: num_instances % m])


def trajectory_turns(shards: Shards, per_instance: Sequence[int]) -> dict[str, int]:
    """Each trajectory's client turns (every repeat of it has as many), from the stored instances'
    counts (`instance_turns`): what goodput needs to tell a session cut off by the end of the run
    from one that ended (docs/metrics.md)."""
    return {e.trajectory_id: n for e, n in zip(shards.index, per_instance, strict=True)}


def instance_turns(shards: Shards) -> list[int]:
    """Each stored instance's client turns, in FIFO order, from the Parquet footers of the files
    `shards` holds open (`Shards.instance_turns`: the slots reading through it parse none again)."""
    return shards.instance_turns()


def _public_url(url: str) -> str:
    """The URL without user:password (never written anywhere)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def request_params(profile: traces.Profile, max_completion_tokens: int | None) -> dict[str, Any]:
    """The profile's body fields as this run sends them (with the --max-completion-tokens override)."""
    params = profile.request_params()
    if max_completion_tokens is not None:
        params["max_completion_tokens"] = max_completion_tokens
    return params


def run_info(
    config: RunConfig,
    shards: Shards,
    profile: traces.Profile,
    base_url: str,
    target: Target | str,
    num: int,
    *,
    verification: traces.Verification | None = None,
    simulator: SimConfig | None = None,
    per_instance: Sequence[int] | None = None,
    engine: EngineIdentity | None = None,
    cache_flush: CacheFlush | None = None,
) -> RunInfo:
    """run.json: everything needed to reproduce and judge the run; never the API key.
    `shard_verification` records the check of the shard files made before the first request;
    `simulator` the settings of the embedded simulator the run started, if it did;
    `per_instance` the stored instances' turn counts when the caller has read them already
    (None: read from the footers here); `engine` who the engine said it is and `cache_flush` the
    prefix-cache reset asked before the first turn (docs/audits.md)."""
    if isinstance(target, str):
        target = Target(target, "given as simulated" if target == "simulated" else None)
    opts = shards.options
    counts = shards.manifest.counts
    return RunInfo(
        trajbench_version=traces.__version__,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        started_monotonic_ns=time.monotonic_ns(),
        shards=str(shards.path.resolve()),
        dataset=DatasetRef(
            shards.manifest.name, shards.content_hash, counts.trajectories, counts.instances, counts.client_turns
        ),
        shard_verification=ShardCheck.of(verification),
        salt=opts.salt,
        salt_seed=opts.seed,
        history_marker=shards.history_marker,
        profile=profile.name,
        profile_content=profile.content(),
        profile_hash=profile.content_hash(),
        profile_built_in=profile.built_in,
        request_params=request_params(profile, config.max_completion_tokens),
        model=target.model.name if target.model is not None else config.model or profile.served_model_name,
        model_source=target.model.source if target.model is not None else ("option" if config.model else "profile"),
        endpoint=_public_url(base_url),
        target=target.kind,
        target_evidence=target.evidence,
        preflight=Preflight(
            target.checked, list(target.served_models) if target.served_models is not None else None, target.keep_alive
        ),
        api_key_given=config.api_key is not None,
        concurrency=config.concurrency,
        num_trajectories=num,
        planned_turns=planned_turns(per_instance if per_instance is not None else instance_turns(shards), num),
        inject_delays=config.inject_delays,
        stop_at_window_end=config.stop_at_window_end,
        stop_issuing_on_first_user_complete=config.stop_at_window_end,
        turn_timeout=turn_timeout_of(config, profile),
        max_idle=max_idle_of(config, profile),
        drain_timeout=config.drain_timeout,
        headers=list(config.headers),
        workers=config.workers,
        backend=config.backend,
        ray_address=(config.ray_address or "auto") if config.backend == "ray" else None,
        ray_resource=config.ray_resource,
        min_workers=config.min_workers if config.backend == "ray" else None,
        tokenizer=config.tokenizer,
        limits=config.limits,
        max_completion_tokens=config.max_completion_tokens,
        skip_preflight=config.skip_preflight,
        api_key_env=config.api_key_env,
        simulator=simulator,
        event_loop=current_loop(),
        slo=config.slo if config.slo.given else None,
        replica_header=config.replica_header,
        options=recorded_options(config),
        engine=engine,
        cache_flush=cache_flush,
        failure_budget=config.failure_budget,
    )
