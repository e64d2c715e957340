"""One mini-swe-agent run on one instance, against the endpoint, with the profile's parameters.

This module imports mini-swe-agent (and through it litellm) at the top, so only the runner imports
it, after `deps.require()`. What is reused as is: mini-swe-agent's `DefaultAgent` loop, its
`LitellmModel` (OpenAI-compatible chat completions with the `bash` tool), its environments and
its SWE-bench configuration (`config/benchmarks/swebench.yaml`: prompts, step limit, observation
and format-error templates). What trajbench adds: the profile's sampling parameters, the endpoint,
the API key kept out of every saved file, a per-instance log and a progress hook.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import litellm
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir, get_config_from_spec
from minisweagent.exceptions import InterruptAgentFlow
from minisweagent.models.litellm_model import LitellmModel
from minisweagent.utils.serialize import recursive_merge

from .templates import TEMPLATES

# litellm prints a provider list to stdout whenever a cost lookup fails (always, for local models);
# mini-swe-agent logs every container start to the console at INFO. Both would tear the progress
# bar; what matters per instance is in its agent.log, and warnings (retries) still show.
litellm.suppress_debug_info = True
logging.getLogger("minisweagent").setLevel(logging.WARNING)

# Chat-completion fields litellm's OpenAI provider forwards itself. Every other profile field
# (top_k, repetition_penalty, chat_template_kwargs, …) goes into `extra_body`: mini-swe-agent's
# SWE-bench config sets `drop_params: true`, which would otherwise drop them without a word.
OPENAI_FIELDS = frozenset(
    {
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "max_completion_tokens",
        "max_tokens",
        "seed",
        "stop",
        "n",
    }
)

# exit statuses after which the agent's run counts as done (its submission, possibly empty, is graded)
FINISHED = frozenset(
    {"Submitted", "LimitsExceeded", "TimeExceeded", "RepeatedFormatError", "ContextWindowExceededError"}
)


def base_config() -> dict[str, Any]:
    """mini-swe-agent's own SWE-bench configuration, unchanged."""
    config: dict[str, Any] = get_config_from_spec(builtin_config_dir / "benchmarks" / "swebench.yaml")
    return config


def api_base(endpoint: str) -> str:
    """The OpenAI base URL (ending in /v1) of an endpoint given with or without /v1."""
    url = endpoint.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def agent_config(
    *, endpoint: str, served_model: str, request_params: dict[str, Any], template: str, step_limit: int | None = None
) -> dict[str, Any]:
    """The merged mini-swe-agent config: its swebench.yaml, the template's changes, then ours."""
    kwargs = {k: v for k, v in request_params.items() if k in OPENAI_FIELDS}
    extra_body = {k: v for k, v in request_params.items() if k not in OPENAI_FIELDS}
    model_kwargs: dict[str, Any] = {"api_base": api_base(endpoint), **kwargs}
    if extra_body:
        model_kwargs["extra_body"] = extra_body
    ours: dict[str, Any] = {
        # the `openai/` prefix makes litellm speak plain OpenAI chat completions to api_base
        "model": {
            "model_name": f"openai/{served_model}",
            "model_kwargs": model_kwargs,
            "cost_tracking": "ignore_errors",
        },
    }
    if step_limit is not None:
        ours["agent"] = {"step_limit": step_limit}
    merged: dict[str, Any] = recursive_merge(base_config(), TEMPLATES[template], ours)
    return merged


class EndpointModel(LitellmModel):
    """mini-swe-agent's litellm model with the API key passed per call, never kept in its config.

    The config is serialised into every trajectory file; the key must not be.
    """

    def __init__(self, *, api_key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._api_key = api_key

    def _query(self, messages: list[dict[str, str]], **kwargs: Any) -> Any:  # litellm's response
        return super()._query(messages, api_key=self._api_key, **kwargs)


class InstanceAgent(DefaultAgent):
    """mini-swe-agent's default agent plus a per-instance log line for every step, and a stop
    flag checked before each step (Ctrl-C stops running agents without waiting for their end)."""

    def __init__(
        self,
        *args: Any,
        log: logging.Logger,
        stop: threading.Event | None = None,
        on_step: Callable[[int], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._log = log
        self._stop = stop
        self._on_step = on_step

    def step(self) -> list[dict[str, Any]]:
        n = self.n_calls + 1
        if self._stop is not None and self._stop.is_set():
            # the loop's own way out: an exit message ends DefaultAgent.run
            raise InterruptAgentFlow(
                {"role": "exit", "content": "Interrupted", "extra": {"exit_status": "Interrupted", "submission": ""}}
            )
        try:
            observations: list[dict[str, Any]] = super().step()
        except Exception as exc:
            self._log.info("step %d: %s", n, type(exc).__name__)
            raise
        for obs in observations:
            self._log.info("step %d: returncode %s", n, obs.get("extra", {}).get("returncode"))
        if self._on_step is not None:
            self._on_step(n)
        return observations

    def query(self) -> dict[str, Any]:
        message: dict[str, Any] = super().query()
        for action in message.get("extra", {}).get("actions", []):
            self._log.info("step %d: $ %s", self.n_calls, action.get("command", "")[:500])
        return message


@dataclass(frozen=True)
class AgentOutcome:
    exit_status: str
    submission: str
    api_calls: int
    error: str | None = None

    @property
    def finished(self) -> bool:
        """The run ended the way agent runs end (not by an infrastructure failure)."""
        return self.exit_status in FINISHED


def run_agent(
    instance: dict[str, Any],
    env: Any,
    config: dict[str, Any],
    *,
    api_key: str,
    trajectory: Path,
    log: logging.Logger,
    stop: threading.Event | None = None,
    on_step: Callable[[int], None] | None = None,
) -> AgentOutcome:
    """Run the agent on `instance` in `env`; the trajectory is saved after every step."""
    model = EndpointModel(api_key=api_key, **config["model"])
    agent = InstanceAgent(
        model, env, log=log, stop=stop, on_step=on_step, **{**config["agent"], "output_path": trajectory}
    )
    try:
        info = agent.run(instance["problem_statement"])
    except litellm.exceptions.ContextWindowExceededError as exc:
        # the model ran out of context: a model outcome (graded as an empty patch), not an outage
        log.info("context window exceeded: %s", exc)
        return AgentOutcome("ContextWindowExceededError", "", agent.n_calls, str(exc))
    except Exception as exc:
        log.info("agent failed: %s\n%s", exc, traceback.format_exc())
        return AgentOutcome(type(exc).__name__, "", agent.n_calls, str(exc))
    status = str(info.get("exit_status") or "")
    submission = str(info.get("submission") or "")
    log.info("exit status %s after %d model calls; patch %d bytes", status, agent.n_calls, len(submission.encode()))
    return AgentOutcome(status, submission, agent.n_calls)
