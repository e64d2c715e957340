"""Every `Example:` of every command's --help runs as written, in the order a user meets them,
from one folder that the earlier examples fill (a session): the synthetic set, shards built from
the bundled sample, a release, runs and a sweep against the serve-sim example's simulator, a
report, the demo. An example that needs what no test machine has (a real engine, Docker, a
submission) says so in its help, under it, and is listed in NOT_HERE.

The one liberty taken: the serve-sim example binds a free port instead of 8000 (other programs
may hold it), and the examples that name http://localhost:8000 are pointed at that port.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from pathlib import Path

import click
import pytest
import zstandard
from clirun import Done, command, trajbench

import cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "traces" / "data" / "sample.jsonl"
URL = "http://localhost:8000"

#: Examples that need what a test machine has not; their help says what (`needs=`).
NOT_HERE = {
    "traces check-template": "an engine's tokenisation route (the simulator has none)",
    "eval check": "four SWE-bench runs",
    "eval swebench": "Docker and SWE-bench Verified",
    "eval swebench-mean": "four SWE-bench runs",
    "profiles derive": "official-shaped reference runs on a real server",
    "submit": "points passing the official gates on a real server",
    "review": "two submission trees",
    "audit": "a sweep against a real server and four SWE-bench runs",
}
#: The order the examples run in (each may use what the earlier ones wrote).
ORDER = [
    "tokenizers",
    "profiles list",
    "docs",
    "traces synth",
    "traces validate",
    "traces build",
    "traces verify",
    "traces show",
    "traces export",
    "traces stats",
    "traces card",
    "traces publish",
    "serve-sim",
    "replay run",
    "eval inline",
    "eval osl",
    "analyze cache",
    "replay sweep",
    "report",
    "explore",
    "replay calibrate",
    "demo",
]
#: Examples whose documented outcome on the sample is a failed gate (exit 1 after the verdict).
VERDICT = {"eval osl": "the sample's answers average about 20 tokens, far below qwen3.6-35b-a3b's band of 355-434"}


def _examples() -> dict[str, tuple[list[str], str | None]]:
    """Each command's example (argv) and what it needs, read from its --help as a user reads it."""
    out: dict[str, tuple[list[str], str | None]] = {}

    def walk(group: click.Group, prefix: tuple[str, ...]) -> None:
        for name, cmd in sorted(group.commands.items()):
            path = (*prefix, name)
            if isinstance(cmd, click.Group):
                walk(cmd, path)
                continue
            with click.Context(cmd, info_name=" ".join(("trajbench", *path))) as ctx:
                text = cmd.get_help(ctx)
            lines = text.split("Example:")[1].split("Options:")[0].strip().splitlines()
            needs = lines[1].strip()[len("(needs ") : -1] if len(lines) > 1 else None
            out[" ".join(path)] = (shlex.split(lines[0])[1:], needs)

    walk(cli.cli, ())
    return out


EXAMPLES = _examples()


def test_every_example_runs_here_or_says_what_it_needs() -> None:
    assert set(ORDER) | set(NOT_HERE) == set(EXAMPLES) and not set(ORDER) & set(NOT_HERE)
    for name in NOT_HERE:
        assert EXAMPLES[name][1], f"{name}: the help must say what its example needs"
    for name in ORDER:  # what runs here needs at most a server at the URL, which the session starts
        needs = EXAMPLES[name][1]
        assert needs is None or needs == cli.NEEDS_SERVER, (name, needs)
        assert (URL in " ".join(EXAMPLES[name][0])) == (needs is not None), name


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A user's folder holding the traces the examples name: the bundled sample, as traces.jsonl.zst."""
    (tmp_path / "traces.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(SAMPLE.read_bytes()))
    return tmp_path


def _run(name: str, here: Path, url: str | None) -> Done:
    argv = [url if (a == URL and url) else a for a in EXAMPLES[name][0]]
    return trajbench(*argv, cwd=here, timeout=900)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # about twenty commands, the demo and the calibration among them
def test_the_examples_run_as_written_in_a_session(session: Path) -> None:
    here = session
    server: subprocess.Popen[str] | None = None
    url: str | None = None
    ran: list[str] = []
    try:
        for name in ORDER:
            if name == "serve-sim":  # a server: started, waited for, used by the examples after it
                argv = [("0" if a == "8000" else a) for a in EXAMPLES[name][0]]
                server = subprocess.Popen(
                    command(*argv), cwd=here, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                )
                assert server.stdout is not None
                ready = server.stdout.readline()
                assert " listening on http://" in ready, ready + (server.stderr.read() if server.stderr else "")
                url = ready.split(" listening on ", 1)[1].split()[0]
                ran.append(name)
                continue
            started = time.monotonic()
            done = _run(name, here, url)
            print(f"{name}: exit {done.code} in {time.monotonic() - started:.1f} s")
            want = 1 if name in VERDICT else 0
            assert done.code == want, f"{name}: exit {done.code}\n{done.out[-3000:]}\n{done.err[-3000:]}"
            assert "Traceback" not in done.err and not done.error_lines, (name, done.err[-2000:])
            ran.append(name)
    finally:
        if server is not None:
            server.terminate()
            server.communicate(timeout=30)
    assert ran == ORDER
    # what the examples promised is there (the demo's folder is large: removed at once)
    for made in ("synthetic.jsonl.zst", "shards/manifest.json", "messages.jsonl", "stats", "data_cards/my-dataset.md",
                 "release/qwen3.6-v1/registry.json", "runs/c8/run.json", "runs/c8/cache_analysis.json",
                 "sweep/sweep.json", "report/report.html", "demo-out"):  # fmt: skip
        assert (here / made).exists(), made
    shutil.rmtree(here / "demo-out", ignore_errors=True)
