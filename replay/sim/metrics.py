"""The simulator's /metrics page: Prometheus text, per replica, names in vLLM's spirit.

Per replica: requests running and waiting, prompt tokens (cached, computed), generated tokens,
prefix-cache hit rate (cached / prompt tokens, cumulative), resident cache tokens, evictions,
steps and modelled busy time; plus faults injected per kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .engine import Replica

P = "trajbench_sim_"

_SERIES: tuple[tuple[str, str, str], ...] = (
    ("num_requests_running", "gauge", "Requests prefilling or decoding."),
    ("num_requests_waiting", "gauge", "Requests queued for admission."),
    ("requests_total", "counter", "Requests submitted to the replica."),
    ("requests_finished_total", "counter", "Requests that generated their last token."),
    ("prompt_tokens_total", "counter", "Prompt tokens of admitted requests."),
    ("prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache."),
    ("prompt_tokens_computed_total", "counter", "Prompt tokens prefilled."),
    ("generation_tokens_total", "counter", "Tokens decoded."),
    ("prefix_cache_hit_rate", "gauge", "Cached / prompt tokens since start."),
    ("prefix_cache_resident_tokens", "gauge", "Tokens resident in the prefix cache."),
    ("prefix_cache_evicted_blocks_total", "counter", "Blocks evicted by LRU."),
    ("prefix_cache_resets_total", "counter", "Prefix-cache resets (POST /reset_prefix_cache)."),
    ("engine_steps_total", "counter", "Engine steps run."),
    ("engine_busy_seconds_total", "counter", "Modelled step time summed."),
)


def _values(r: Replica) -> dict[str, float]:
    return {
        "num_requests_running": r.num_running,
        "num_requests_waiting": r.num_waiting,
        "requests_total": r.requests_total,
        "requests_finished_total": r.requests_finished,
        "prompt_tokens_total": r.prompt_tokens_total,
        "prompt_tokens_cached_total": r.cached_tokens_total,
        "prompt_tokens_computed_total": r.computed_tokens_total,
        "generation_tokens_total": r.generation_tokens_total,
        "prefix_cache_hit_rate": r.cached_tokens_total / r.prompt_tokens_total if r.prompt_tokens_total else 0.0,
        "prefix_cache_resident_tokens": r.cache.resident_tokens,
        "prefix_cache_evicted_blocks_total": r.cache.evicted_blocks,
        "prefix_cache_resets_total": r.cache_resets_total,
        "engine_steps_total": r.steps_total,
        "engine_busy_seconds_total": r.busy_seconds_total,
    }


def _num(v: float) -> str:
    return str(v) if isinstance(v, int) else repr(float(v))


def metrics_text(replicas: Sequence[Replica], faults: Mapping[str, int]) -> str:
    values = [_values(r) for r in replicas]
    lines = [
        f"# HELP {P}info The endpoint is trajbench's simulator, not a real inference server.",
        f"# TYPE {P}info gauge",
        f'{P}info{{simulated="true"}} 1',
    ]
    for name, kind, help_text in _SERIES:
        lines += [f"# HELP {P}{name} {help_text}", f"# TYPE {P}{name} {kind}"]
        lines += [f'{P}{name}{{replica="{r.index}"}} {_num(v[name])}' for r, v in zip(replicas, values, strict=True)]
    lines += [f"# HELP {P}faults_total Faults injected, by kind.", f"# TYPE {P}faults_total counter"]
    lines += [f'{P}faults_total{{kind="{k}"}} {n}' for k, n in sorted(faults.items())]
    return "\n".join(lines) + "\n"


def parse_metrics(text: str) -> dict[str, dict[str, float]]:
    """`{series: {label value: number}}` of a metrics page (for tests and the replay's scrapes)."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, _, labels = name_labels.partition("{")
        label = labels.rstrip("}").split("=", 1)[-1].strip('"') if labels else ""
        out.setdefault(name.removeprefix(P), {})[label] = float(value)
    return out
