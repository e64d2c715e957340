"""The simulator's settings: one frozen `SimConfig` and the one option table both front ends use.

`trajbench serve-sim` (click, in cli.py) and `python -m replay.sim` (argparse, what the embedded
launcher runs) are generated from `OPTIONS`, so the two can never drift apart. Defaults describe a
mid-size GPU server (one H100-class replica serving a ~30B MoE model); every number is a knob.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from traces import format_size, parse_size

from .errors import SimError

ANSWER_MODES = ("synthetic", "oracle")
ROUTERS = ("affinity", "round-robin", "least-loaded")
FAULT_KINDS = ("500", "429", "reset", "midstream", "error-object", "malformed", "stall")
#: Ways the simulator can game an agentic audit (docs/audits.md; sim/games.py says how), each
#: caught by its own audit: `none` is the honest simulator.
GAMES = ("none", "generated-reuse", "cross-session", "response-cache", "truncate")

#: The fingerprint every response carries, so no result can be mistaken for a real server's:
#: as the `SIM_HEADER` of every HTTP response, the `system_fingerprint` of every chat response
#: and the models list, and `"simulated": true` in /health.
FINGERPRINT = "trajbench-sim"
SIM_HEADER = "X-Simulated"
#: Carried by the client's preflight request only, so a server's logs can tell it apart from a
#: run's turns; the simulator answers it without faults.
PREFLIGHT_HEADER = "X-Trajbench-Preflight"


class SimConfigError(SimError, ValueError):
    """A simulator option is out of range or inconsistent."""


@dataclass(frozen=True)
class SimConfig:
    model: str = "trajbench-sim"
    seed: int = 0
    answers: str = "synthetic"
    shards: str | None = None
    oracle_repeats: int = 4
    osl_mean: float = 400.0
    osl_cv: float = 0.5
    reasoning_fraction: float = 0.3
    replicas: int = 1
    router: str = "affinity"
    session_header: str = "X-Session-ID"
    step_base_ms: float = 8.0
    prefill_ms_per_token: float = 0.04
    batch_ms_per_seq: float = 0.1
    token_budget: int = 8192
    max_num_seqs: int = 256
    block_size: int = 16
    cache_tokens: int | None = 500_000
    fail_rate: float = 0.0
    fail_kinds: tuple[str, ...] = FAULT_KINDS
    stall_seconds: float = 600.0
    tokenizer: str | None = None
    game: str = "none"

    def __post_init__(self) -> None:
        checks = [
            (self.answers in ANSWER_MODES, f"--answers must be one of {', '.join(ANSWER_MODES)}"),
            (
                self.answers != "oracle" or bool(self.shards),
                "--answers oracle needs --shards DIR (a folder from `trajbench traces build`)",
            ),
            (self.router in ROUTERS, f"--router must be one of {', '.join(ROUTERS)}"),
            (self.replicas >= 1, "--replicas must be >= 1"),
            (self.token_budget >= 1, "--token-budget must be >= 1"),
            (self.max_num_seqs >= 1, "--max-num-seqs must be >= 1"),
            (self.block_size >= 1, "--block-size must be >= 1"),
            (self.cache_tokens is None or self.cache_tokens >= 0, "--cache-tokens must be >= 0 or 'unlimited'"),
            (0.0 <= self.fail_rate <= 1.0, "--fail-rate must be within [0, 1]"),
            (
                bool(self.fail_kinds) and set(self.fail_kinds) <= set(FAULT_KINDS),
                f"--fail-kinds must be a comma list of {','.join(FAULT_KINDS)}",
            ),
            (
                min(self.step_base_ms, self.prefill_ms_per_token, self.batch_ms_per_seq) >= 0,
                "step-time coefficients must be >= 0",
            ),
            (self.osl_mean >= 1 and self.osl_cv >= 0, "--osl-mean must be >= 1 and --osl-cv >= 0"),
            (0.0 <= self.reasoning_fraction < 1.0, "--reasoning-fraction must be within [0, 1)"),
            (self.oracle_repeats >= 1, "--oracle-repeats must be >= 1"),
            (self.game in GAMES, f"--game must be one of {', '.join(GAMES)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise SimConfigError(f"simulator option: {message}")

    @property
    def zero_latency(self) -> bool:
        return self.step_base_ms == self.prefill_ms_per_token == self.batch_ms_per_seq == 0


UNLIMITED = "unlimited"


def parse_cache_tokens(text: str) -> int | str:
    """A size in tokens (`traces.parse_size`: 500000, 500k, 1.5M), or the word `unlimited` (kept
    as text so "not given" stays distinguishable)."""
    if text.strip().lower() in (UNLIMITED, "inf", "none"):
        return UNLIMITED
    return parse_size(text)


def parse_kinds(text: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in text.split(",") if k.strip())


@dataclass(frozen=True)
class Option:
    """One command-line option: `--name` maps to the SimConfig field `name` with dashes."""

    name: str
    help: str
    parse: Callable[[str], Any] | None = None  # text → value, when not the field's plain type
    choices: tuple[str, ...] | None = None
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The SimConfig field (and parsed-options key) of the option."""
        return self.name.replace("-", "_")

    @property
    def default(self) -> Any:
        return getattr(DEFAULTS, self.dest)

    @property
    def shown_default(self) -> str:
        """The default as help text shows it."""
        d = self.default
        return (
            ",".join(d)
            if isinstance(d, tuple)
            else UNLIMITED
            if d is None and self.parse is parse_cache_tokens
            else format_size(d)
            if self.parse is parse_cache_tokens
            else str(d)
        )

    @property
    def kind(self) -> Callable[[str], Any]:
        """The text → value parser of the option (its own, else the default value's type)."""
        if self.parse is not None:
            return self.parse
        return type(self.default) if self.default is not None else str


OPTIONS: tuple[Option, ...] = (
    Option("model", "Served model name listed by /v1/models (requests may name any model)."),
    Option("seed", "Seed of synthetic answers and of fault selection."),
    Option(
        "answers",
        "synthetic: seeded lengths; oracle: the recorded answer of the turn (needs --shards).",
        choices=ANSWER_MODES,
    ),
    Option("shards", "Shard folder the oracle answers from (`trajbench traces build`).", metavar="DIR"),
    Option("oracle-repeats", "Repeats the oracle recognises (replay re-salts later repeats)."),
    Option("osl-mean", "Mean synthetic answer length in tokens (lognormal)."),
    Option("osl-cv", "Coefficient of variation of synthetic lengths (0 = fixed length)."),
    Option("reasoning-fraction", "Share of a synthetic tool-calling answer spent on reasoning deltas."),
    Option("replicas", "Simulated engine replicas behind the router."),
    Option("router", "How requests are placed on replicas.", choices=ROUTERS),
    Option("session-header", "Header the affinity router hashes (docs/requests.md)."),
    Option("step-base-ms", "Step time a: fixed cost of one engine step, ms."),
    Option("prefill-ms-per-token", "Step time b: ms per prefilled (uncached) prompt token."),
    Option("batch-ms-per-seq", "Step time c: ms per sequence in the step's batch."),
    Option("token-budget", "Tokens per step shared by chunked prefill and one decode token per running request."),
    Option("max-num-seqs", "Requests a replica runs at once; the rest wait."),
    Option("block-size", "Prefix-cache block size in tokens."),
    Option(
        "cache-tokens",
        "Prefix-cache capacity per replica in tokens (k = 1,000, M = 1,000,000: 500k, 1.5M), or 'unlimited'.",
        parse=parse_cache_tokens,
        metavar="N|unlimited",
    ),
    Option("fail-rate", "Fraction of requests given a fault, chosen by a seeded hash of the prompt."),
    Option(
        "fail-kinds",
        "Comma list of faults to draw from: " + ",".join(FAULT_KINDS) + ".",
        parse=parse_kinds,
        metavar="KINDS",
    ),
    Option("stall-seconds", "How long a 'stall' fault holds the stream open without sending."),
    Option(
        "tokenizer",
        "Count tokens with a tokenizer from the registry (NAME or NAME:PATH), rendering prompts with its chat "
        "template; default: ~4 chars per token.",
        metavar="SPEC",
    ),
    Option(
        "game",
        "Game an agentic audit (docs/audits.md), to test that it is caught: generated-reuse (cache keys ignore "
        "whitespace), cross-session (cache keys ignore the salts), response-cache (answers kept across runs and "
        "cache resets), truncate (every answer cut at its first token); none is honest.",
        choices=GAMES,
    ),
)

_FIELDS = {f.name: f for f in fields(SimConfig)}
DEFAULTS = SimConfig()


def config_from_options(values: dict[str, Any]) -> SimConfig:
    """Build a SimConfig from parsed option values; None means "use the default"."""
    kwargs = {k: v for k, v in values.items() if k in _FIELDS and v is not None}
    if "fail_kinds" in kwargs and isinstance(kwargs["fail_kinds"], str):
        kwargs["fail_kinds"] = parse_kinds(kwargs["fail_kinds"])
    if kwargs.get("cache_tokens") == UNLIMITED:
        kwargs["cache_tokens"] = None
    return SimConfig(**kwargs)


def config_from_args(argv: Sequence[str]) -> SimConfig:
    """A SimConfig from simulator options as `trajbench serve-sim` takes them, e.g. the words of
    `replay run --sim-args "--osl-mean 64 --seed 1"`; a bad option is a SimConfigError."""
    import argparse

    p = argparse.ArgumentParser(prog="--sim-args", add_help=False, exit_on_error=False)
    for opt in OPTIONS:
        p.add_argument(f"--{opt.name}", dest=opt.dest, type=opt.kind, choices=opt.choices, default=None)
    try:
        known, extra = p.parse_known_args(list(argv))
    except (argparse.ArgumentError, ValueError) as exc:
        raise SimConfigError(f"--sim-args: {exc}; see `trajbench serve-sim --help` for the options") from None
    if extra:
        raise SimConfigError(
            f"--sim-args: unknown option(s) {' '.join(extra)}; see `trajbench serve-sim --help` for the options"
        )
    return config_from_options(vars(known))


def config_to_args(config: SimConfig, base: SimConfig = DEFAULTS) -> list[str]:
    """The command-line arguments that turn `base` into `config`: from the defaults, what
    launches a child simulator; from `embedded_config`, what --sim-args replays a run's."""
    args: list[str] = []
    for option in OPTIONS:
        value = getattr(config, option.dest)
        if value == getattr(base, option.dest):
            continue
        if option.name == "cache-tokens" and value is None:
            text = UNLIMITED
        elif option.name == "fail-kinds":
            text = ",".join(value)
        else:
            text = str(value)
        args += [f"--{option.name}", text]
    return args


#: How much faster than the default step model the embedded simulator runs unless told otherwise.
EMBEDDED_SPEEDUP = 64


#: The step-time coefficients (SimConfig fields) the speed-up divides.
STEP_MODEL = ("step_base_ms", "prefill_ms_per_token", "batch_ms_per_seq")
#: Those coefficients `EMBEDDED_SPEEDUP` times faster than the default (mid-size GPU) step model.
FAST_STEP_MODEL = {name: getattr(DEFAULTS, name) / EMBEDDED_SPEEDUP for name in STEP_MODEL}


def standalone_config(values: dict[str, Any], *, realistic: bool = False) -> SimConfig:
    """`trajbench serve-sim`'s simulator: as quick to try as the embedded one (its step model
    `EMBEDDED_SPEEDUP` times faster; a 137-turn trajectory of synthetic answers takes seconds,
    not the nine minutes the default model paces it to), the default mid-size GPU step model
    with `realistic`. A step coefficient given explicitly is kept either way."""
    given = {k: v for k, v in values.items() if v is not None}
    if not realistic:
        given = {**FAST_STEP_MODEL, **given}
    return config_from_options(given)


def embedded_config(shards: str, args: Sequence[str] = ()) -> SimConfig:
    """The simulator `replay run` and `replay sweep` start when no --endpoint is given, and the
    one `trajbench demo` uses: oracle answers from the run's own shards and the default step
    model `EMBEDDED_SPEEDUP` times faster. A first run then takes seconds and its accuracy gates
    score the recorded answers (the default synthetic answers score 0 and take the default
    model's minutes). `args`, the words of --sim-args, override any piece of it."""
    fast = [word for name, value in FAST_STEP_MODEL.items() for word in (f"--{name.replace('_', '-')}", str(value))]
    return config_from_args(["--answers", "oracle", "--shards", shards, *fast, *args])


def describe(config: SimConfig) -> str:
    """What a simulator answers and how fast, in a few words (the one line a run prints)."""
    if config.answers == "oracle":
        answers = "oracle answers from the shards"
    else:
        answers = f"synthetic answers (mean {config.osl_mean:g} tokens)"
    coefficients = ("step_base_ms", "prefill_ms_per_token", "batch_ms_per_seq")
    ratios = {round(getattr(DEFAULTS, c) / getattr(config, c), 6) if getattr(config, c) else 0.0 for c in coefficients}
    if config.zero_latency:
        speed = "zero-latency step model"
    elif ratios == {1.0}:
        speed = "the default step model"
    elif len(ratios) == 1 and 0.0 not in ratios:
        ratio = ratios.pop()
        speed = f"step model {ratio:g}× faster" if ratio > 1 else f"step model {1 / ratio:g}× slower"
    else:
        speed = (
            "a custom step model ("
            + ", ".join(f"--{c.replace('_', '-')} {getattr(config, c):g}" for c in coefficients)
            + ")"
        )
    parts = [answers, speed]
    if config.replicas > 1:
        parts.append(f"{config.replicas} replicas ({config.router} router)")
    if config.fail_rate:
        parts.append(f"faults on {100 * config.fail_rate:g} % of requests")
    if config.game != "none":
        parts.append(f"GAMING the audits ({config.game})")
    return ", ".join(parts)
