"""The configuration of one replay run (`trajbench replay run`), checked before anything starts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import traces

from .client import DEFAULT_LIMITS, ResponseLimits
from .errors import ReplayError
from .results import Slo
from .sim import SimConfig

#: docs/requests.md: the session header every request carries unless the user names others (or none).
DEFAULT_HEADERS = ("X-Session-ID",)
#: Where a run's workers run (docs/ray.md).
BACKENDS = ("auto", "process", "ray")
#: What --api-key-env may hold: the name of an environment variable, never a key.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: No SLO: no goodput is computed.
NO_SLO = Slo()


@dataclass(frozen=True)
class RunConfig:
    """Everything `run_replay` needs. `endpoint=None` replays against the embedded simulator."""

    shards: str
    profile: str = "kimi-k3"
    endpoint: str | None = None
    model: str | None = None
    concurrency: int = 1
    num_trajectories: int | None = None  # None: one pass over the shards
    inject_delays: bool = True
    stop_at_window_end: bool = False  # the reference's stop_issuing_on_first_user_complete
    turn_timeout: float | None = None  # None: the profile's (traces.Profile.turn_timeout_s)
    drain_timeout: float = 10.0
    headers: tuple[str, ...] = DEFAULT_HEADERS
    workers: int = 1
    out: str | None = None  # None: a fresh trajbench-runs/<timestamp>-c<C>
    overwrite: bool = False
    tokenizer: str | None = None  # client-side token counts when the server sends no usage
    progress: str = "auto"  # the status on stderr: auto, rich, plain or none (traces.Progress)
    sim: SimConfig | None = None  # the embedded simulator's options (None: its defaults)
    # Overrides the profile's output cap (e.g. a tiny model in CI). NOT official: the profile's
    # sampling parameters are fixed (docs/requests.md), and run.json's request_params shows the override.
    max_completion_tokens: int | None = None
    limits: ResponseLimits = DEFAULT_LIMITS
    # Before the first turn: list the models and send one tiny request (replay.engine.preflight).
    skip_preflight: bool = False
    # Never written to run.json or any log; repr=False keeps it out of tracebacks too.
    api_key: str | None = field(default=None, repr=False)
    # The environment variable the key was read from (--api-key-env): its name is recorded, so
    # run.json can replay the run (`--config run.json`) without ever holding the key.
    api_key_env: str | None = None
    # Service-level objectives judging goodput (replay.results.goodput); they never change what is sent.
    slo: Slo = NO_SLO
    # Where the workers run (docs/ray.md): "auto" (in-process for one worker, else processes),
    # "process", or "ray" (actors on a Ray cluster at ray_address, optionally pinned to nodes
    # advertising the custom resource ray_resource; the run stops below min_workers live ones).
    backend: str = "auto"
    ray_address: str | None = None  # None: "auto" (the cluster Ray finds itself)
    ray_resource: str | None = None
    min_workers: int = 1
    # A response header whose value each record keeps (`replica`): which replica served the turn,
    # for `trajbench analyze cache` (docs/cache.md). None: nothing is kept.
    replica_header: str | None = None
    # Seconds a kept-alive socket may idle and still be reused; None: the profile's (max_idle_s).
    max_idle: float | None = None

    def check(self) -> None:
        if self.concurrency < 1:
            raise ReplayError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.num_trajectories is not None and self.num_trajectories < 1:
            raise ReplayError(f"--trajectories must be >= 1, got {self.num_trajectories}")
        if self.workers < 1:
            raise ReplayError(f"--workers must be >= 1, got {self.workers}")
        if self.workers > self.concurrency:
            raise ReplayError(
                f"--workers {self.workers} is more than --concurrency {self.concurrency}; "
                "every worker needs at least one slot"
            )
        if self.backend not in BACKENDS:
            raise ReplayError(f"--backend {self.backend!r}: choose one of {', '.join(BACKENDS)}")
        if self.backend != "ray" and (
            self.ray_address is not None or self.ray_resource is not None or self.min_workers != 1
        ):
            raise ReplayError(
                "--ray-address, --ray-resource and --min-workers apply to --backend ray only (docs/ray.md)"
            )
        if not 1 <= self.min_workers <= self.workers:
            raise ReplayError(f"--min-workers must be between 1 and --workers {self.workers}, got {self.min_workers}")
        if self.max_completion_tokens is not None and self.max_completion_tokens < 1:
            raise ReplayError(f"--max-completion-tokens must be >= 1, got {self.max_completion_tokens}")
        if self.turn_timeout is not None and self.turn_timeout <= 0:
            raise ReplayError(f"--turn-timeout must be > 0 seconds, got {self.turn_timeout}")
        if self.max_idle is not None and self.max_idle <= 0:
            raise ReplayError(f"--max-idle must be > 0 seconds, got {self.max_idle}")
        if self.drain_timeout < 0:
            raise ReplayError(f"--drain-timeout must be >= 0 seconds, got {self.drain_timeout}")
        for name in (*self.headers, *([self.replica_header] if self.replica_header is not None else [])):
            if not name or any(c in name for c in " :\r\n\t") or not name.isascii():
                raise ReplayError(f"--header {name!r} is not a valid HTTP header name")
        if self.progress not in traces.PROGRESS_MODES:
            raise ReplayError(f"--progress {self.progress!r}: choose one of {', '.join(traces.PROGRESS_MODES)}")
        if self.progress != "none":
            try:
                traces.plain_seconds()  # a bad interval is told now, not after run.json is written
            except traces.TraceError as exc:
                raise ReplayError(str(exc)) from None
        if self.api_key_env is not None and not ENV_NAME.fullmatch(self.api_key_env):
            # never echo the value: it may be the key itself, pasted where its variable's name goes
            raise ReplayError(
                "--api-key-env must name an environment variable (letters, digits and _, not starting with "
                "a digit), not hold the key; export the key as e.g. OPENAI_API_KEY and pass that name"
            )
        self.limits.check()
        self.slo.check()
        if self.endpoint is not None and not self.endpoint.startswith(("http://", "https://")):
            raise ReplayError(f"--endpoint {self.endpoint!r} must start with http:// or https://")


def turn_timeout_of(config: RunConfig, profile: traces.Profile) -> float:
    """The run's turn timeout: --turn-timeout, else the profile's (docs/closed-loop.md)."""
    return config.turn_timeout if config.turn_timeout is not None else profile.turn_timeout_s


def max_idle_of(config: RunConfig, profile: traces.Profile) -> float:
    """How long a kept-alive socket may idle and be reused: --max-idle, else the profile's."""
    return config.max_idle if config.max_idle is not None else profile.max_idle_s


def slots_of_worker(concurrency: int, workers: int, worker: int) -> tuple[int, ...]:
    """Slot ids of one worker: contiguous blocks, sizes differing by at most one."""
    base, extra = divmod(concurrency, workers)
    start = worker * base + min(worker, extra)
    return tuple(range(start, start + base + (1 if worker < extra else 0)))
