"""The command line as a user meets it: every command's --help, and one error each, printed as
one line that says what to fix, with the documented exit code (never a traceback)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
import pytest
from clirun import in_process as run

import cli


def _commands(group: click.Group = cli.cli, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        out += _commands(command, path) if isinstance(command, click.Group) else [path]
    return out


COMMANDS = _commands()


def test_the_command_tree_is_the_documented_one() -> None:
    assert {" ".join(c) for c in COMMANDS} == {
        "analyze cache", "audit", "demo", "eval check", "eval inline", "eval osl", "eval swebench", "eval swebench-mean", "explore", "profiles derive", "profiles list",
        "replay calibrate", "replay run", "replay sweep", "report", "review", "serve-sim", "submit", "tokenizers",
        "traces build", "traces card",
        "traces check-template",
        "traces export", "traces publish", "traces show", "traces stats", "traces synth", "traces validate", "traces verify",
    }  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*command, "--help"], capsys)
    assert (code, err) == (0, "")
    assert out.startswith(f"Usage: trajbench {' '.join(command)} ")
    summary = out.split("\n\n")[1].strip()
    assert len(summary) > 20 and summary[0].isupper(), f"no one-line summary: {summary!r}"
    assert "SPEC §" not in out and "DESIGN.md" not in out  # help cites the project's docs/


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_help_has_one_example_that_parses(
    command: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run([*command, "--help"], capsys)
    assert out.count("Example:") == 1, out
    line = out.split("Example:")[1].split("Options:")[0].strip()
    argv = shlex.split(line)
    assert argv[: 1 + len(command)] == ["trajbench", *command], line
    # the folders an example names exist in a real session; the parser checks everything else
    monkeypatch.chdir(tmp_path)
    for arg in argv:
        if arg.startswith(("runs/", "sweep/", "swe", "submission")):
            (tmp_path / arg).mkdir(parents=True, exist_ok=True)
    cmd = cli.cli
    for name in command:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    cmd.make_context(" ".join(command), argv[1 + len(command) :])  # raises on an unknown or invalid option


def _shards_dir(tmp: Path) -> str:
    return str(tmp / "not-shards")


# (argv with {tmp}, exit code, a piece of the stderr that says what is wrong and what to do)
ERRORS = {
    "analyze cache": (["analyze", "cache", "{empty}"], 1, "no run.json; pass a folder written by `trajbench replay run`"),
    "audit": (["audit", "{empty}"], 1, "no run.json; pass a folder written by `trajbench replay run`"),
    "demo": (["demo", "--out", "/proc/trajbench-demo"], 1, "Error: /proc/trajbench-demo: No such file or directory; check the path"),
    "eval check": (["eval", "check", "{empty}"], 1, "no run.json; pass a folder written by `trajbench replay run`"),
    "eval inline": (["eval", "inline", "{empty}"], 1, "no run.json; pass a folder written by `trajbench replay run`"),
    "eval osl": (["eval", "osl", "{empty}"], 1, "no run.json; pass a folder written by `trajbench replay run`"),
    "eval swebench": (["eval", "swebench", "--dataset", "x", "--endpoint", "http://127.0.0.1:9", "--profile", "nope"], 2, "Invalid value for '--profile'"),
    "eval swebench-mean": (["eval", "swebench-mean", "{empty}"], 1, "swebench_summary.json: not found; pass folders written by `trajbench eval swebench`"),
    "explore": (["explore", "{empty}", "--out", "{tmp}/site"], 1, "empty: no submission tree (trajbench-submission.json), sweep folder (sweep.json) or finished run folder"),
    "profiles derive": (["profiles", "derive", "{empty}", "--name", "x"], 1, "no run.json; pass a folder written by `trajbench replay run`"),
    "profiles list": (["profiles", "list", "--profiles", "{tmp}/nope.yaml"], 1, "nope.yaml: no such profile file; check the path"),
    "replay calibrate": (["replay", "calibrate", "--turns", "0"], 2, "Invalid value for '--turns': 0 is not in the range x>=1"),
    "replay run": (["replay", "run", "{empty}"], 1, "no manifest.json here; pass a folder written by `trajbench traces build`"),
    "replay sweep": (["replay", "sweep", "{empty}", "--out", "{tmp}/s"], 2, "give exactly one of --concurrency LIST or --regions"),
    "report": (["report", "{empty}", "--out", "{tmp}/r"], 1, "neither a run folder (performance/result_summary.json) nor a sweep folder (sweep.json)"),
    "review": (["review", "{empty}"], 1, "Error: 1 of 1 review checks failed; see {empty}/review.md"),
    "serve-sim": (["serve-sim", "--replicas", "0"], 1, "Error: simulator option: --replicas must be >= 1"),
    "submit": (["submit", "{empty}", "--out", "{tmp}/t", "--submitter", "Acme", "--division", "closed", "--system-file", "{tmp}/nope.yaml"], 1, "Error: --system-file {tmp}/nope.yaml: no such file; check the path"),
    "tokenizers": (["tokenizers", "--bogus"], 2, "No such option '--bogus'"),
    "traces build": (["traces", "build", "{bad}", "--out", "{tmp}/o"], 1, "bad.jsonl:1: conversation_id must be a non-empty printable ASCII string"),
    "traces card": (["traces", "card", "{empty}", "--out", "{tmp}/c.md"], 1, "no manifest.json here; pass a folder written by `trajbench traces build`"),
    "traces check-template": (["traces", "check-template", "{empty}", "--endpoint", "http://127.0.0.1:9"], 1, "no manifest.json here; pass a folder written by `trajbench traces build`"),
    "traces export": (["traces", "export", "{empty}", "--out", "{tmp}/x.jsonl"], 1, "no manifest.json here"),
    "traces publish": (["traces", "publish", "{empty}", "--profile", "kimi-k3", "--out", "{tmp}/rel"], 1, "no manifest.json here; pass a folder written by `trajbench traces build`"),
    "traces show": (["traces", "show", "{empty}", "--trajectory", "a", "--turn", "1"], 1, "no manifest.json here"),
    "traces stats": (["traces", "stats", "{empty}"], 1, "no manifest.json here"),
    "traces synth": (["traces", "synth", "--out", "{tmp}/x.jsonl", "--scale", "0"], 2, "Invalid value for '--scale': 0.0 is not in the range x>0"),
    "traces validate": (["traces", "validate", "{tmp}/nope.jsonl"], 1, "Error: {tmp}/nope.jsonl: no such file; check the path"),
    "traces verify": (["traces", "verify", "{empty}"], 1, "no manifest.json here"),
}  # fmt: skip


def test_every_command_has_an_error_case() -> None:
    assert set(ERRORS) == {" ".join(c) for c in COMMANDS}


@pytest.mark.parametrize("command", sorted(ERRORS))
def test_one_error_each(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\n')
    argv, want_code, want_text = ERRORS[command]
    fill = {"tmp": str(tmp_path), "empty": str(tmp_path / "empty"), "bad": str(tmp_path / "bad.jsonl")}
    code, _, err = run([a.format(**fill) for a in argv], capsys)
    assert code == want_code, err
    assert want_text.format(**fill) in err
    assert "Traceback" not in err
    assert "Warning" not in err  # a folder that is not a run is not "a partial run"


def _all_commands(command: click.Command = cli.cli, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    """Every command and group of the tree, the root included, with its path."""
    out = [(" ".join(("trajbench", *path)), command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            out += _all_commands(sub, (*path, name))
    return out


@pytest.mark.parametrize(("path", "command"), _all_commands(), ids=[p for p, _ in _all_commands()])
def test_every_option_has_help(path: str, command: click.Command) -> None:
    options = [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]
    missing = [p.opts[0] for p in options if not (p.help or "").strip()]
    assert missing == [], f"{path}: options without help text: {missing}"
