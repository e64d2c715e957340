"""The configuration of one replay run (`trajbench replay run`), checked before anything starts,
and the declaration of every option that sets it.

Each field an option sets declares that option (`traces.declare`): name, type, default, help,
range or choices, whether run.json records it. From these declarations come the click options
of `replay run` and `replay sweep` (cli.py), the keys of a `--config` file and the checks of
their values (`replay.options`), the field's value (`run_config`) and run.json's `options`
(`recorded_options`), which `--config run.json` reads back. Adding an option is adding a field
here (docs/architecture.md, "Adding a run option").
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import traces
from traces import Option, Values, declare

from .client import DEFAULT_LIMITS, ResponseLimits
from .errors import ReplayError, UsageProblem
from .results import Slo, parse_slo
from .sim import SimConfig, config_to_args, embedded_config

#: docs/requests.md: the session header every request carries unless the user names others (or none).
DEFAULT_HEADERS = ("X-Session-ID",)
#: Where a run's workers run (docs/ray.md).
BACKENDS = ("auto", "process", "ray")
#: What --api-key-env may hold: the name of an environment variable, never a key.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: No SLO: no goodput is computed.
NO_SLO = Slo()


def _profile_name(name: str) -> str:
    """A profile a `--config` file names, checked against the built-in and loaded ones."""
    try:
        return traces.get_profile(name).name
    except traces.TraceError as exc:
        raise ValueError(str(exc).rstrip(".")) from None


def _profile(values: Values) -> str:
    """The profile named, else the one the shards' token columns were counted for (as `traces show`)."""
    if values["profile"]:
        return str(values["profile"])
    profile, note = traces.shards_profile(traces.Shards(values["shards"]), quiet_without_tokenizer=True)
    if note:
        values.notes.append(f"Note: {note}")
    return profile.name


def _headers(values: Mapping[str, Any]) -> tuple[str, ...]:
    if values["no_session_header"] and values["header"]:
        raise UsageProblem("--header and --no-session-header exclude each other")
    return () if values["no_session_header"] else (tuple(values["header"]) or DEFAULT_HEADERS)


def _sim(values: Mapping[str, Any]) -> SimConfig | None:
    """The embedded simulator's settings: its defaults for these shards, then --sim-args (None
    with an --endpoint)."""
    text = values["sim_args"]
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageProblem(f"{text!r}: {exc}", option="--sim-args") from None
    if values["endpoint"] is not None:
        if words:
            raise UsageProblem(
                "--sim-args configures the embedded simulator, which runs only without --endpoint; drop one of them"
            )
        return None
    return embedded_config(str(Path(values["shards"]).resolve()), words)


def _sim_args(config: RunConfig) -> dict[str, Any]:
    """The --sim-args that give a run's simulator back over the embedded defaults for its shards
    (nothing with an --endpoint). The simulator answers from the shards being replayed,
    whichever they are, so its own `shards` is not an argument."""
    if config.endpoint is not None:
        return {}
    base = embedded_config(str(Path(config.shards).resolve()))
    ran = replace(config.sim or SimConfig(), shards=base.shards)
    return {"sim_args": shlex.join(config_to_args(ran, base)) or None}


def _limits(values: Mapping[str, Any]) -> ResponseLimits:
    return ResponseLimits(
        max_header_bytes=values["max_header_kb"] << 10,
        max_event_bytes=values["max_event_mb"] << 20,
        max_response_bytes=values["max_response_mb"] << 20,
        memory_budget_bytes=values["memory_budget_mb"] << 20,
    )


def _limit_options(config: RunConfig) -> dict[str, Any]:
    return {
        "max_response_mb": config.limits.max_response_bytes >> 20,
        "memory_budget_mb": config.limits.memory_budget_bytes >> 20,
        "max_event_mb": config.limits.max_event_bytes >> 20,
        "max_header_kb": config.limits.max_header_bytes >> 10,
    }


def _api_key(values: Mapping[str, Any]) -> str | None:
    """The key, from the variable --api-key-env names: never from a file, never written."""
    return os.environ.get(values["api_key_env"]) or None


@dataclass(frozen=True)
class RunConfig:
    """Everything `run_replay` needs. `endpoint=None` replays against the embedded simulator."""

    shards: str = declare(  # recorded as an absolute path: a run.json replays from any folder
        Option("shards", "", kind="argument", metavar="[SHARDS_DIR]"),
        record=lambda c: {"shards": str(Path(c.shards).resolve())},
    )
    endpoint: str | None = declare(
        "Base URL of an OpenAI-compatible server (default: start the embedded simulator).", default=None
    )
    profile: str = declare(
        Option(
            "profile",
            "Model profile: fixed sampling parameters (docs/requests.md); default: the one the shards' tokenizer "
            "belongs to, else kimi-k3 (as `traces show`).",
            kind="profile",
            check=_profile_name,
        ),
        default="kimi-k3",
        build=_profile,
    )
    model: str | None = declare(
        "Served model name (default: the profile's; if the endpoint does not serve it and serves exactly one "
        "model, that one, docs/engines.md).",
        default=None,
    )
    num_trajectories: int | None = declare(  # None: one pass over the shards
        "Trajectory instances to start (default: one pass over the shards).",
        default=None,
        name="trajectories",
        type=int,
        minimum=1,
    )
    inject_delays: bool = declare(
        Option("no-delays", "Skip the recorded inter-turn delays (not official).", type=bool, default=False),
        default=True,
        build=lambda v: not v["no_delays"],
        record=lambda c: {"no_delays": not c.inject_delays},
    )
    stop_at_window_end: bool = declare(  # the reference's stop_issuing_on_first_user_complete
        "Stop issuing when the performance window closes (stop_issuing_on_first_user_complete; not official).",
        default=False,
    )
    turn_timeout: float | None = declare(  # None: the profile's (traces.Profile.turn_timeout_s)
        "Seconds per turn; a timed-out request is cancelled and the turn fails.  "
        "[default: the profile's, 14400 for the official ones (docs/closed-loop.md)]",
        default=None,
        type=float,
        minimum=0,
        open_minimum=True,
    )
    max_idle: float | None = declare(  # None: the profile's (traces.Profile.max_idle_s)
        "Seconds a kept-alive socket may idle and still be reused.  "
        "[default: the profile's, 0.5 for the official ones (docs/closed-loop.md)]",
        default=None,
        type=float,
        minimum=0,
        open_minimum=True,
    )
    drain_timeout: float = declare(
        "After Ctrl-C, seconds in-flight turns may finish before they are cancelled.", default=10.0, minimum=0
    )
    headers: tuple[str, ...] = declare(
        Option(
            "header",
            "Session header name carrying the logical id (repeatable; default X-Session-ID).",
            multiple=True,
            excludes=("no_session_header",),
        ),
        Option("no-session-header", "Send no session header.", type=bool, default=False, excludes=("header",)),
        default=DEFAULT_HEADERS,
        build=_headers,
        record=lambda c: {"header": c.headers or None, "no_session_header": not c.headers},
    )
    workers: int = declare(
        "Workers sharing the slots (1 = in-process); processes, or Ray actors with --backend ray.",
        default=1,
        minimum=1,
    )
    # Where the workers run (docs/ray.md): "auto" (in-process for one worker, else processes),
    # "process", or "ray" (actors on a Ray cluster at ray_address, optionally pinned to nodes
    # advertising the custom resource ray_resource; the run stops below min_workers live ones).
    backend: str = declare(
        "Where workers run: auto (in-process for 1, else processes), process, or ray (docs/ray.md).",
        default="auto",
        choices=BACKENDS,
    )
    ray_address: str | None = declare(  # None: "auto" (the cluster Ray finds itself)
        "--backend ray: the cluster's HOST:PORT.  [default: auto]", default=None
    )
    ray_resource: str | None = declare("--backend ray: pin workers to nodes with this resource.", default=None)
    min_workers: int = declare(
        "--backend ray: stop with an error when fewer workers are left alive.", default=1, minimum=1
    )
    overwrite: bool = declare("Reuse an existing run folder.", default=False, recorded=False)
    tokenizer: str | None = declare(  # client-side token counts when the server sends no usage
        "Count output tokens client-side with NAME or NAME:PATH (the reference's count: the numbers use it "
        "and cross-check the server's usage against it); official points need it (docs/compliance.md).",
        default=None,
    )
    # The environment variable the key is read from (--api-key-env): its name is recorded, so
    # run.json can replay the run (`--config run.json`) without ever holding the key.
    api_key_env: str | None = declare(
        Option(
            "api-key-env",
            "Environment variable holding the bearer token; the key is never written anywhere.",
            default="OPENAI_API_KEY",
        ),
        default=None,
    )
    sim: SimConfig | None = declare(  # the embedded simulator's options (None: its defaults)
        Option(
            "sim-args",
            "Options of the embedded simulator over its defaults here (oracle answers from the shards, step model "
            '64x faster), e.g. "--answers synthetic --osl-mean 64" (see `trajbench serve-sim --help`).',
            default="",
        ),
        default=None,
        build=_sim,
        record=_sim_args,
    )
    # Overrides the profile's output cap (e.g. a tiny model in CI). NOT official: the profile's
    # sampling parameters are fixed (docs/requests.md), and run.json's request_params shows the override.
    max_completion_tokens: int | None = declare(
        "Override the profile's output cap (e.g. a tiny model in CI; not official).", default=None, type=int, minimum=1
    )
    # Before the first turn: list the models and send one tiny request (replay.engine.preflight).
    skip_preflight: bool = declare(
        "Start without first checking the endpoint (models list and one tiny request).", default=False
    )
    limits: ResponseLimits = declare(
        Option(
            "max-response-mb",
            "Cap on everything one turn's response may send; beyond it the turn fails (too_large).",
            type=int,
            default=DEFAULT_LIMITS.max_response_bytes >> 20,
            minimum=1,
        ),
        Option(
            "memory-budget-mb",
            "What one worker's responses in flight may hold together: each turn's cap is its slot's share "
            "(at least 4 MiB) when smaller than --max-response-mb.",
            type=int,
            default=DEFAULT_LIMITS.memory_budget_bytes >> 20,
            minimum=1,
        ),
        Option(
            "max-event-mb",
            "Cap on one SSE line or event of a response (too_large beyond it).",
            type=int,
            default=DEFAULT_LIMITS.max_event_bytes >> 20,
            minimum=1,
        ),
        Option(
            "max-header-kb",
            "Cap on a response's status line and headers (too_large beyond it).",
            type=int,
            default=DEFAULT_LIMITS.max_header_bytes >> 10,
            minimum=1,
        ),
        default=DEFAULT_LIMITS,
        build=_limits,
        record=_limit_options,
    )
    # Service-level objectives judging goodput (replay.results.goodput, docs/metrics.md); they
    # never change what is sent.
    slo: Slo = declare(
        Option("slo", "Per-turn SLO for goodput, e.g. ttft_ms=2000,tpot_ms=50 (either key optional; docs/metrics.md)."),
        Option(
            "session-slo",
            "Session SLO for goodput: seconds of a trajectory's active time (sum of its turns' E2E, delays left out).",
            type=float,
            minimum=0,
            open_minimum=True,
        ),
        default=NO_SLO,
        build=lambda v: parse_slo(v["slo"], v["session_slo"]),
        record=lambda c: {"slo": c.slo.turn_spec(), "session_slo": c.slo.session_s},
    )
    progress: str = declare(traces.PROGRESS_OPTION, default="auto")  # the status on stderr (traces.Progress)
    # A response header whose value each record keeps (`replica`): which replica served the turn,
    # for `trajbench analyze cache` (docs/cache.md). None: nothing is kept.
    replica_header: str | None = declare(
        "Keep this response header's value per turn (which replica served it; the simulator sends "
        "X-Sim-Replica), for `trajbench analyze cache` (docs/cache.md).",
        default=None,
    )
    # Empty the engine's prefix cache before the first turn (docs/audits.md): the run starts cold
    # even when the server served an earlier run; refused where the engine has no reset.
    flush_cache: bool = declare(
        "Reset the engine's prefix cache before the first turn (vLLM, SGLang, the simulator; refused where "
        "the engine has none), so the point starts cold (docs/audits.md).",
        default=False,
    )
    # Window turns that may end other than ok (failed, aborted, partial, cancelled, worker-lost)
    # for the point to stay official; recorded in run.json, judged by `eval check`.
    failure_budget: int = declare(
        "Window turns that may end other than ok (failed, aborted, partial, cancelled, worker-lost) for the "
        "point to stay official (default 0; docs/compliance.md).",
        default=0,
        minimum=0,
    )
    # The options each command declares its own way (`replay sweep` takes a list and a sweep
    # folder): `replay run`'s are these.
    concurrency: int = declare(
        "Slots (simulated users), each with at most one request in flight.",
        default=1,
        minimum=1,
        short="-c",
        kind="concurrency",
    )
    out: str | None = declare(  # None: a fresh trajbench-runs/<timestamp>-c<C>
        "Run folder (default: trajbench-runs/<time>-c<C>).", default=None, kind="dir", recorded=False
    )
    # Never written to run.json or any log; repr=False keeps it out of tracebacks too.
    api_key: str | None = declare(default=None, build=_api_key, repr=False)
    # Options of the layers above replay (jobs: --gates), by key: run.json records them beside
    # the run's own, so `--config run.json` gives them back; replay never reads them.
    extra_options: dict[str, Any] = field(default_factory=dict, hash=False)

    def check(self) -> None:
        for declared in traces.declared(RunConfig):
            if declared.build is None and declared.options:
                problem = declared.options[0].problem(getattr(self, declared.field))
                if problem is not None:
                    raise ReplayError(problem)
        if self.workers > self.concurrency:
            raise ReplayError(
                f"--workers {self.workers} is more than --concurrency {self.concurrency}; "
                "every worker needs at least one slot"
            )
        if self.backend != "ray" and (
            self.ray_address is not None or self.ray_resource is not None or self.min_workers != 1
        ):
            raise ReplayError(
                "--ray-address, --ray-resource and --min-workers apply to --backend ray only (docs/ray.md)"
            )
        if not 1 <= self.min_workers <= self.workers:
            raise ReplayError(f"--min-workers must be between 1 and --workers {self.workers}, got {self.min_workers}")
        for name in (*self.headers, *([self.replica_header] if self.replica_header is not None else [])):
            if not name or any(c in name for c in " :\r\n\t") or not name.isascii():
                raise ReplayError(f"--header {name!r} is not a valid HTTP header name")
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


#: The options of `replay run` and `replay sweep`, in `--help` order (each command may declare
#: its own form of some: `replay sweep`'s --concurrency is a list).
RUN_OPTIONS: tuple[Option, ...] = traces.options_of(RunConfig)


def run_config(values: Values, **fixed: Any) -> RunConfig:
    """The RunConfig of a command's settled option values (`replay.settle`); `fixed` sets the
    fields the command decides itself (a sweep's concurrency and folder). A note for the user
    (the profile chosen for the shards) lands in `values.notes`."""
    kwargs: dict[str, Any] = {}
    for declared in traces.declared(RunConfig):
        if declared.field not in fixed and all(o.key in values for o in declared.options):
            kwargs[declared.field] = declared.value(values)
    return RunConfig(**{**kwargs, **fixed})


def recorded_options(config: RunConfig) -> dict[str, Any]:
    """What run.json's `options` holds: every recorded option's value for this configuration, by
    key (None ones left out), and the options of the layers above (`extra_options`): read back
    as a `--config` file, they give the same configuration."""
    out: dict[str, Any] = {}
    for declared in traces.declared(RunConfig):
        out.update(declared.recorded(config))
    out.update(config.extra_options)
    return dict(sorted(out.items()))


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
