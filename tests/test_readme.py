"""The README's "Try it on the bundled sample" block works as written: its commands, parsed from
README.md (so the test breaks when the README drifts), run one by one as a user runs them, in a
fresh folder laid out like the repository's root (the bundled sample at traces/data/), each in
its own `trajbench` process. Every one exits 0, the replay says what it ran against, and the
inline gate passes; the OSL claim the README makes about this sample holds too."""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest
from clirun import ROOT, Done, trajbench

README = ROOT / "README.md"
HEADING = "## Try it on the bundled sample"


def sample_block() -> list[list[str]]:
    """The commands of the first ```bash block under the heading, comments dropped."""
    text = README.read_text(encoding="utf-8")
    assert HEADING in text, f"README.md has no {HEADING!r} section"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, f"no ```bash block under {HEADING!r}"
    return [words for line in block.group(1).splitlines() if (words := shlex.split(line, comments=True))]


def test_the_block_is_the_quick_start_it_claims_to_be() -> None:
    commands = [" ".join(c) for c in sample_block()]
    assert all(c.startswith("trajbench ") for c in commands)
    assert commands[0].startswith("trajbench traces build traces/data/sample.jsonl ")
    assert any(c.startswith("trajbench replay run ") and " -c 8" in c and "--endpoint" not in c for c in commands)
    assert any(c.startswith("trajbench eval inline ") for c in commands)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Done]]:
    here = tmp_path_factory.mktemp("readme")
    (here / "traces" / "data").mkdir(parents=True)
    shutil.copy(ROOT / "traces" / "data" / "sample.jsonl", here / "traces" / "data" / "sample.jsonl")
    done = []
    for words in sample_block():
        result = trajbench(*words[1:], cwd=here)
        assert result.code == 0, f"`{shlex.join(words)}` exited {result.code}:\n{result.out}\n{result.err}"
        done.append(result)
    return here, done


@pytest.mark.slow
def test_every_command_exits_0_and_the_inline_gate_passes(ran: tuple[Path, list[Done]]) -> None:
    _, done = ran
    replayed = next(d for words, d in zip(sample_block(), done, strict=True) if words[1:3] == ["replay", "run"])
    assert replayed.out.startswith(
        "target: embedded simulator — oracle answers from the shards, step model 64× faster; "
        "pass --endpoint to measure a server, --sim-args to change it\n"
    )
    assert "turns       sent 17, ok 17, partial 0, failed 0" in replayed.out
    scored = next(d for words, d in zip(sample_block(), done, strict=True) if words[1:3] == ["eval", "inline"])
    assert "inline score 1.0000" in scored.out and "PASS: kimi-k3 needs >= " in scored.out


@pytest.mark.slow
def test_the_osl_gate_fails_on_the_sample_as_the_readme_says(ran: tuple[Path, list[Done]]) -> None:
    here, _ = ran
    claim = "The OSL gate (`trajbench eval osl sample-run/`) fails on this sample"
    assert claim in " ".join(README.read_text(encoding="utf-8").split())
    osl = trajbench("eval", "osl", "sample-run/", cwd=here)
    assert osl.code == 1 and "tokens below the band 390-475" in osl.out


def test_the_set_up_is_two_commands_the_second_the_fast_suite_on_every_core() -> None:
    """The README's test command runs in parallel (pytest-xdist, in the test extra) and pyproject's
    addopts leave the slow and engine tests to .ci/run."""
    section = README.read_text(encoding="utf-8").split("## Set-up (two commands)", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    assert block.group(1).splitlines()[1] == ".venv/bin/python -m pytest -q -n auto"
    assert len(block.group(1).splitlines()) == 2
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(r.startswith("pytest-xdist") for r in pyproject["project"]["optional-dependencies"]["test"])
    assert "-m 'not slow and not engine'" in pyproject["tool"]["pytest"]["ini_options"]["addopts"]
