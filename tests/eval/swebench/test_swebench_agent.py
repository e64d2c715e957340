"""The mini-swe-agent configuration a profile produces, and the package's import hygiene."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import traces

ROOT = Path(__file__).resolve().parents[3]


def test_eval_imports_without_the_extra_packages() -> None:
    code = (
        "import sys, eval, eval.swebench, cli\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('minisweagent', 'swebench', 'litellm'))\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("missing", "named"),
    [(("minisweagent", "swebench"), "mini-swe-agent and swebench"), (("minisweagent",), "mini-swe-agent")],
)
def test_missing_extra_says_what_to_install(missing: tuple[str, ...], named: str, tmp_path: Path) -> None:
    # absent whatever this machine has (sys.modules[name] = None makes a module unimportable);
    # what is not made absent is made present, so the message is the same everywhere
    code = (
        "import importlib.machinery, sys, types\n"
        "for name in ('minisweagent', 'swebench'):\n"
        f"    if name in {missing!r}:\n"
        "        sys.modules[name] = None\n"
        "    else:\n"
        "        sys.modules[name] = types.ModuleType(name)\n"
        "        sys.modules[name].__spec__ = importlib.machinery.ModuleSpec(name, None)\n"
        "from cli import main\n"
        f"main(['eval', 'swebench', '--dataset', 'x.jsonl', '--endpoint', 'http://127.0.0.1:9', '--profile', 'kimi-k3', '--out', {str(tmp_path / 'o')!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == f"Error: the SWE-bench runner needs {named}: pip install 'trajbench[swebench]'\n"
    assert not (tmp_path / "o").exists()


def _config(profile: str) -> dict[str, Any]:
    pytest.importorskip(
        "minisweagent", reason="the SWE-bench extra is not installed: pip install 'trajbench[swebench]'"
    )
    from eval.swebench import deps

    deps.require()
    from eval.swebench.agent import agent_config

    p = traces.get_profile(profile)
    return agent_config(
        endpoint="http://gpu:8000/",
        served_model=p.served_model_name,
        request_params=p.request_params(),
        template=p.swebench_template,
    )


@pytest.mark.slow
def test_qwen_profile_params_reach_the_body_not_dropped() -> None:
    cfg = _config("qwen3.6-35b-a3b")
    mk = cfg["model"]["model_kwargs"]
    assert cfg["model"]["model_name"] == "openai/Qwen/Qwen3.6-35B-A3B"
    assert mk["api_base"] == "http://gpu:8000/v1"
    assert (mk["temperature"], mk["top_p"], mk["presence_penalty"], mk["max_completion_tokens"]) == (
        1.0,
        0.95,
        1.5,
        8192,
    )
    # not OpenAI fields: they ride in extra_body, where litellm's drop_params cannot remove them
    assert mk["extra_body"] == {
        "top_k": 20,
        "repetition_penalty": 1.0,
        "chat_template_kwargs": {"preserve_thinking": True},
    }
    assert mk["parallel_tool_calls"] is False  # the qwen_tools template
    assert "api_key" not in mk


@pytest.mark.slow
def test_default_template_is_mini_swe_agents_swebench_config() -> None:
    cfg = _config("kimi-k3")
    from eval.swebench.agent import base_config

    base = base_config()
    assert cfg["agent"] == base["agent"]
    mk = cfg["model"]["model_kwargs"]
    assert mk["parallel_tool_calls"] is True and "extra_body" not in mk
    assert (mk["temperature"], mk["top_p"], mk["max_completion_tokens"]) == (1.0, 1.0, 8192)
    assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in cfg["agent"]["instance_template"]


def test_every_profile_names_a_known_template() -> None:
    from eval.swebench import TEMPLATES

    assert {p.swebench_template for p in traces.profiles().values()} <= set(TEMPLATES)
