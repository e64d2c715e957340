"""Agent templates a model profile can name (`swebench_template`): changes to mini-swe-agent's
own SWE-bench configuration (`config/benchmarks/swebench.yaml`), merged over it.

- `default`: mini-swe-agent's configuration unchanged (bash tool, parallel tool calls allowed).
- `qwen_tools`: for Qwen3.6 served with a Qwen tool-call parser: one tool call per response
  (`parallel_tool_calls: false`). The prompts stay mini-swe-agent's. This is trajbench's
  definition until the benchmark's reference publishes its own; change it here, in one place.

A plain dict (house style): the CLI and the runner list its keys when a name is wrong.
"""

from __future__ import annotations

from typing import Any

TEMPLATES: dict[str, dict[str, Any]] = {
    "default": {},
    "qwen_tools": {"model": {"model_kwargs": {"parallel_tool_calls": False}}},
}
