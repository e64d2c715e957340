"""The command line starts light: `import cli` (what `trajbench --help` and every command pay
before they run) loads the option declarations and the front doors, not the run machinery, the
scorers, the compliance check or the libraries under them. Each command imports what it runs
when it runs (`tests/bench/bench_fixed.py` measures the time this saves).

Checked in a fresh interpreter (this test process has imported everything already), by the
modules in `sys.modules`, never by a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from clirun import ROOT, trajbench

#: Modules the command line itself never needs: what `replay run`, the gates, `eval check`,
#: `traces build` and the analyses load when they run.
HEAVY = (
    "numpy",
    "pyarrow",
    "httpx",
    "matplotlib",
    "yaml",
    "importlib.metadata",
    "asyncio",
    "traces.formats",
    "traces.shards",
    "traces.publish",
    "traces.analysis",
    "replay.run",
    "replay.loop",
    "replay.report",
    "replay.cacheobs",
    "replay.engine",
    "eval.compliance",
    "eval.audits",
    "eval.inline",
    "eval.osl",
    "eval.rundir",
    "eval.submission",
    "eval.swebench",
)


def _python(code: str) -> str:
    """Run `code` in a fresh interpreter on this tree; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    out = _python(f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    return set(json.loads(out.splitlines()[-1]))


def test_import_cli_loads_none_of_the_run_machinery() -> None:
    loaded = _loaded_after("import cli")
    assert "cli" in loaded and "jobs" in loaded
    assert sorted(m for m in HEAVY if m in loaded) == []


def test_help_loads_none_of_it_either() -> None:
    loaded = _loaded_after(
        "import contextlib, io, cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'])\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['replay', 'run', '--help'])"
    )
    assert sorted(m for m in HEAVY if m in loaded) == []


def test_a_command_loads_what_it_runs() -> None:
    """The lazy names resolve when a command needs them (here the formats' registry, shown in
    `traces build --help`), and only then."""
    loaded = _loaded_after(
        "import contextlib, io, cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['traces', 'build', '--help'])"
    )
    assert "traces.formats" in loaded and "eval.compliance" not in loaded


def test_the_version_and_the_registry_choices_still_show() -> None:
    version = trajbench("--version")
    assert version.code == 0 and version.out.startswith("trajbench, version ")
    build = trajbench("traces", "build", "--help")
    assert "[atif|mini-swe-agent|mlperf-jsonl|openai-messages|snapshots|workflow]" in build.out
    assert "--salt [mlperf|strong|none]" in build.out
    submit = trajbench("submit", "--help")
    assert "--division [closed|open]" in submit.out
    bad = trajbench("traces", "validate", "x.jsonl", "--format", "nope")
    assert bad.code == 2 and "'nope' is not one of 'atif'," in bad.err


def test_a_lazy_name_stays_the_function_after_its_submodule_is_imported() -> None:
    """`traces.profiles` (the function) shares its name with the submodule `traces.profiles`;
    importing the submodule by another path must not put the module in the function's place."""
    probe = (
        "import traces.profiles, traces.publish, eval.review, eval.submit\n"
        "import traces, eval as e\n"
        "import types\n"
        "names = [traces.profiles, traces.publish, traces.distribution, e.review, e.submit]\n"
        "assert not any(isinstance(n, types.ModuleType) for n in names), names\n"
        "assert 'kimi-k3' in traces.profiles()\n"
    )
    _python(probe)
