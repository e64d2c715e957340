"""What run.json records about the engine itself (docs/audits.md): who it says it is, and the
prefix-cache reset asked of it before the run (`--flush-cache`).

`replay.engine` fills them in (`probe_engine`, `flush_prefix_cache`); they live here, with
run.json, because every reader of a run folder (eval's audits, a SWE-bench summary compared
with the performance points) reads them without asking the engine again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineIdentity:
    """Who the engine says it is, read before the run (`replay.engine.probe_engine`).

    The same-model audit compares `engine`, `version` and `chat_template_sha256` (with the model
    a run requested) across a submission's points and its SWE-bench runs; `models`, `model_path`
    and `answered` say where each came from."""

    engine: str  # "vllm", "sglang", "llama.cpp", "trajbench-sim" or "unknown"
    models: list[str]  # GET /v1/models: the served ids
    model_path: str | None  # the weights the server loaded (its models card's root, or server info)
    version: str | None  # GET /version (vLLM, the simulator), server info (SGLang), build info (llama.cpp)
    chat_template_sha256: str | None  # the sha256 of the chat template the engine serves (llama.cpp's /props)
    answered: list[str]  # the routes that answered with what was read, e.g. ["GET /v1/models", "GET /version"]


@dataclass(frozen=True)
class CacheFlush:
    """The prefix-cache reset asked before the run (`--flush-cache`): the request and its answer."""

    route: str  # e.g. "POST /reset_prefix_cache"
    engine: str  # the engine kind the route was chosen for
    status: int  # its HTTP status (a refused reset stops the run before it starts)
    answer: str  # the first characters of its body ("" for vLLM's empty 200)
    seconds: float
