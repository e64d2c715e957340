"""The reference client's files a trajbench run folder does not have, made from the run's own:
`config.yaml` (the reference's benchmark configuration, from run.json) and
`accuracy/accuracy_results.json` (its accuracy entries, from scores.json and the records).

Each key keeps the reference's meaning (docs/submission.md): a setting trajbench does not have is
written as the reference's own agentic examples write it (no minimum duration, the default
seeds), a value the reference leaves out when unset (`target_qps` of a concurrency load) is left
out, and a sampling parameter the reference's schema does not know is not written (run.json, in
the same scenario folder, holds everything that was sent). Same run, same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

import traces
from replay import Record, RunInfo

from .layout import ACCURACY_RESULTS

#: The reference's defaults for settings trajbench has no counterpart of: its closed loop has no
#: minimum or maximum duration, and it issues trajectories in file order (no random seed is
#: used); 42 is the reference's default and what its agentic rules ask for.
NO_DURATION_MS = 0
DEFAULT_SEED = 42
#: The reference's name of the inline scorer and of the agentic load pattern.
INLINE_EVAL_METHOD = "agentic_inference_inline"
LOAD_PATTERN = "agentic_inference"
#: The reference's dataset_type of the inline entry (scored from the performance run's outputs).
PERFORMANCE = "performance"


@dataclass(frozen=True)
class ModelParams:
    """`model_params`: the served model and the profile's sampling parameters the reference's
    schema has (None: not sent, left out of the file as the reference leaves it out)."""

    name: str
    temperature: float | None = None
    seed: int | None = None
    top_k: int | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    max_new_tokens: int | None = None
    streaming: str = "on"  # trajbench always streams
    tokenizer_name: str | None = None


@dataclass(frozen=True)
class AccuracyConfig:
    eval_method: str = INLINE_EVAL_METHOD
    num_repeats: int = 1


@dataclass(frozen=True)
class AgenticInference:
    turn_timeout_s: float
    enable_salt: bool  # the reference's salt form only (trajbench's `mlperf` mode)
    inject_tool_delay: bool
    routing_headers: list[str]
    num_trajectories_to_issue: int
    stop_issuing_on_first_user_complete: bool


@dataclass(frozen=True)
class Dataset:
    name: str
    type: str
    accuracy_config: AccuracyConfig
    agentic_inference: AgenticInference


@dataclass(frozen=True)
class Runtime:
    min_duration_ms: int
    max_duration_ms: int
    n_samples_to_issue: int  # the client turns the run planned: the samples it issues
    scheduler_random_seed: int
    dataloader_random_seed: int


@dataclass(frozen=True)
class LoadPattern:
    type: str
    target_concurrency: int
    target_qps: float | None = None  # a closed loop has no target rate: left out


@dataclass(frozen=True)
class Settings:
    runtime: Runtime
    load_pattern: LoadPattern


@dataclass(frozen=True)
class EndpointConfig:
    endpoints: list[str]
    api_type: str = "openai"


@dataclass(frozen=True)
class RefConfig:
    """config.yaml: the reference's BenchmarkConfig as its runs write it (None fields left out)."""

    name: str
    version: str  # the reference's config version, not a tool version
    type: str
    model_params: ModelParams
    datasets: list[Dataset]
    settings: Settings
    endpoint_config: EndpointConfig

    def text(self) -> str:
        return yaml.safe_dump(_drop_none(traces.to_json(self)), sort_keys=False, default_flow_style=False)


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def public_url(url: str) -> str:
    """The endpoint without credentials, query or fragment (never a secret in a published file)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_MODEL_KEYS = {f.name for f in fields(ModelParams)} - {"name", "streaming", "tokenizer_name", "max_new_tokens"}


def reference_config(info: RunInfo, seeds: tuple[int, int] = (DEFAULT_SEED, DEFAULT_SEED)) -> RefConfig:
    """config.yaml of a run (`seeds`: scheduler and dataloader seeds as the run recorded them)."""
    sent = info.request_params
    cap = sent.get("max_completion_tokens", sent.get("max_tokens"))
    model = ModelParams(
        name=info.model,
        max_new_tokens=cap if isinstance(cap, int) else None,
        tokenizer_name=info.tokenizer,
        **{k: v for k, v in sent.items() if k in _MODEL_KEYS},
    )
    dataset = Dataset(
        name=info.dataset.name,
        type=PERFORMANCE,
        accuracy_config=AccuracyConfig(),
        agentic_inference=AgenticInference(
            turn_timeout_s=float(info.turn_timeout),
            enable_salt=info.salt == "mlperf",
            inject_tool_delay=info.inject_delays,
            routing_headers=list(info.headers),
            num_trajectories_to_issue=info.num_trajectories,
            stop_issuing_on_first_user_complete=info.stop_issuing_on_first_user_complete,
        ),
    )
    return RefConfig(
        name=f"{info.profile}-agentic-c{info.concurrency}",
        version="1.0",
        type="online",
        model_params=model,
        datasets=[dataset],
        settings=Settings(
            runtime=Runtime(NO_DURATION_MS, NO_DURATION_MS, info.planned_turns, seeds[0], seeds[1]),
            load_pattern=LoadPattern(LOAD_PATTERN, info.concurrency),
        ),
        endpoint_config=EndpointConfig([public_url(info.endpoint)]),
    )


def seeds_of(summary: Any) -> tuple[int, int]:
    """The seeds a run's result_summary.json (parsed) records under `run_config`, else the
    reference's default."""
    run_config = summary.get("run_config") if isinstance(summary, dict) else None

    def seed(key: str) -> int:
        v = run_config.get(key) if isinstance(run_config, dict) else None
        return v if isinstance(v, int) and not isinstance(v, bool) else DEFAULT_SEED

    return seed("scheduler_random_seed"), seed("dataloader_random_seed")


@dataclass(frozen=True)
class AccuracyEntry:
    """One `accuracy_scores` entry, the reference's keys; the inline entry of a performance run."""

    dataset_name: str
    extractor: str | None
    ground_truth_column: str | None
    score: float | None
    unit_samples: int  # client turns of one pass over the dataset
    num_repeats: int
    total_samples: int  # turns the run issued (aborted ones included, as the reference counts)
    duration_s: float
    complete: bool
    dataset_type: str


@dataclass(frozen=True)
class AccuracyResults(traces.JsonFile):
    """accuracy/accuracy_results.json; no `average_accuracy`: the reference averages accuracy
    datasets only, and the inline entry is a performance one."""

    FILE = ACCURACY_RESULTS
    SORT_KEYS = False

    accuracy_scores: list[AccuracyEntry] = field(default_factory=list)


def accuracy_results(
    info: RunInfo, score: float | None, records: Sequence[Record], *, complete: bool
) -> AccuracyResults:
    """The inline entry of a run: its inline score (scores.json's), the turns it issued, the
    wall clock from its first send to its last byte, and whether the run ran every planned turn."""
    issued = len({(r.instance_id, r.turn) for r in records})
    starts = [r.t_send_ns for r in records if r.error_kind != "aborted"]
    ends = [r.t_last_ns if r.t_last_ns is not None else r.t_send_ns for r in records if r.error_kind != "aborted"]
    duration = round((max(ends) - min(starts)) / 1e9, 3) if starts else 0.0
    entry = AccuracyEntry(
        dataset_name=info.dataset.name,
        extractor=None,
        ground_truth_column=None,
        score=score,
        unit_samples=info.dataset.client_turns,
        num_repeats=1,
        total_samples=issued,
        duration_s=duration,
        complete=complete,
        dataset_type=PERFORMANCE,
    )
    return AccuracyResults([entry])
