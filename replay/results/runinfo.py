"""`run.json`: everything needed to reproduce and judge a run, as a typed file (docs/files.md).

Written before the first turn is sent, read by eval (the gates, the compliance check) and by
reports, and given back to `--config` it replays the run: its `options` are the options the run
was started with (`replay.options`). It never holds
the API key: `api_key_given` only says whether one was used, `api_key_env` where it was read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import traces

from ..client import ResponseLimits
from ..errors import ReplayError
from ..sim import SimConfig
from .engineinfo import CacheFlush, EngineIdentity
from .layout import RUN_FILE
from .slo import Slo

#: `target_evidence` of a run against the simulator `replay run` started itself (no --endpoint).
EMBEDDED_EVIDENCE = "the embedded simulator (no --endpoint)"


@dataclass(frozen=True)
class DatasetRef:
    """The shards a run replayed, as their manifest identifies them."""

    name: str
    content_hash: str
    trajectories: int
    instances: int
    client_turns: int


@dataclass(frozen=True)
class ShardCheck:
    """The check of the shard files against their manifest made before the first request."""

    verified: bool
    method: str | None = None
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    content_hash: str | None = None

    @classmethod
    def of(cls, v: traces.Verification | None) -> ShardCheck:
        if v is None:
            return cls(False)
        return cls(True, v.method, v.files, v.bytes, round(v.seconds, 3), v.content_hash)


@dataclass(frozen=True)
class Preflight:
    """What the endpoint said before the run (`replay.engine.preflight`)."""

    checked: bool
    served_models: list[str] | None
    #: False: the server closed its socket after a streamed answer, so the run opened a
    #: connection per request; None: not checked (--skip-preflight)
    keep_alive: bool | None = None


@dataclass(frozen=True)
class RayWorkerInfo:
    """One Ray worker of a `--backend ray` run (docs/ray.md): where it ran and its clock."""

    worker: int
    slots: int
    node_id: str
    node_ip: str
    hostname: str
    #: its monotonic clock minus the driver's (latest check), ± half the shortest round trip
    clock_offset_ns: int | None
    clock_uncertainty_ns: int | None
    clock_checks: int
    clock_offset_range_ns: int | None  # max − min offset over the checks (drift seen)
    lost: str | None = None  # why it died mid-run, if it did


@dataclass(frozen=True)
class RayRun:
    """How a `--backend ray` run placed its workers and mapped their clocks (written at the end)."""

    address: str
    placement: str  # "spread", or "resource:NAME" (pinned to nodes advertising NAME)
    min_workers: int
    workers: list[RayWorkerInfo]
    #: turns whose send lay within the clock uncertainty of the window close (decided by the
    #: offset estimate, docs/ray.md)
    window_edge_turns: int


@dataclass(frozen=True)
class RunInfo(traces.JsonFile):
    FILE = RUN_FILE

    trajbench_version: str
    started_at: str
    started_monotonic_ns: int
    shards: str
    dataset: DatasetRef
    shard_verification: ShardCheck
    salt: str
    salt_seed: int
    history_marker: bool
    profile: str
    request_params: dict[str, Any]  # what was sent: an overridden output cap shows here
    model: str
    endpoint: str
    target: str  # "real" or "simulated" (never an official point)
    target_evidence: str | None
    preflight: Preflight | None
    api_key_given: bool
    concurrency: int
    num_trajectories: int
    planned_turns: int
    inject_delays: bool
    stop_at_window_end: bool
    stop_issuing_on_first_user_complete: bool  # the reference's name of stop_at_window_end
    turn_timeout: float
    drain_timeout: float
    headers: list[str]
    workers: int
    tokenizer: str | None
    limits: ResponseLimits
    # The options below complete what `--config run.json` needs to replay the run; a run.json
    # written before them lacks them and reads with these values.
    max_completion_tokens: int | None = None  # the --max-completion-tokens override, if any
    skip_preflight: bool = False
    api_key_env: str | None = None  # the variable's name only, never the key
    simulator: SimConfig | None = None  # the embedded simulator's settings (no --endpoint)
    # The profile in full and its hash (traces.Profile.content_hash), so a run with a user profile
    # can be judged without its file, and a changed profile is seen (docs/maintainers.md).
    profile_content: dict[str, Any] | None = None
    profile_hash: str | None = None
    profile_built_in: bool | None = None
    event_loop: str | None = None  # the client processes' event loop (replay.client.eventloop)
    slo: Slo | None = None  # --slo / --session-slo: what goodput is judged by (None: no SLO)
    # How the slots were driven (docs/ray.md): "auto" (in-process for one worker, else processes),
    # "process" or "ray"; `ray` is filled in when a Ray run ends.
    backend: str = "auto"
    ray_address: str | None = None
    ray_resource: str | None = None
    min_workers: int | None = None
    ray: RayRun | None = None
    replica_header: str | None = None  # --replica-header: the response header kept per turn
    # The options the run was started with, by key, as a --config file spells them (the jobs'
    # --gates among them): `--config run.json` reads them back (replay.config.recorded_options).
    options: dict[str, Any] | None = None
    # Who the engine says it is (docs/audits.md, the same-model audit); None: not asked (a run.json
    # written before it, or a run through a custom client).
    engine: EngineIdentity | None = None
    # The prefix-cache reset asked before the first turn (--flush-cache); None: none was asked.
    cache_flush: CacheFlush | None = None
    # --failure-budget: window turns that may end other than ok for the point to stay official
    # (docs/compliance.md); a run.json written before it has none, which is 0.
    failure_budget: int = 0
    # Seconds a kept-alive socket could idle and be reused (--max-idle, else the profile's); a
    # run.json written before it lacks it (those runs used 4 s).
    max_idle: float | None = None
    # How `model` was settled (replay.engine.served): "option" (--model), "profile" (the profile's
    # served name), "served" (the profile's name was not served and the endpoint serves exactly
    # this one model); None in a run.json written before it was recorded.
    model_source: str | None = None


def read_run_info(run_dir: str | os.PathLike[str]) -> RunInfo:
    """A run folder's run.json, with the fix in the error when it is missing or not ours."""
    if not RunInfo.exists(run_dir):
        raise ReplayError(f"{run_dir}: no {RUN_FILE}; pass a folder written by `trajbench replay run`")
    try:
        return RunInfo.read(run_dir)
    except traces.ContractError as exc:
        raise ReplayError(f"{exc}; the run was written by another trajbench version: rerun it") from None
