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
        "analyze cache", "audit", "demo", "docs", "eval check", "eval inline", "eval osl", "eval swebench", "eval swebench-mean", "explore", "profiles derive", "profiles list",
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
    lines = out.split("Example:")[1].split("Options:")[0].strip().splitlines()
    line = lines[0].strip()
    # what an example needs beyond the folders it names is said under it (tests/test_examples.py runs the rest)
    assert all(extra.strip().startswith("(needs ") for extra in lines[1:]), lines
    argv = shlex.split(line)
    assert argv[: 1 + len(command)] == ["trajbench", *command], line
    # the folders an example names exist in a real session; the parser checks everything else
    monkeypatch.chdir(tmp_path)
    for arg in argv:
        if arg.startswith(("runs/", "sweep/", "swe", "submission")):
            (tmp_path / arg).mkdir(parents=True, exist_ok=True)
    cmd: click.Command = cli.cli
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
    "docs": (["docs", "sweeps"], 1, "Error: no documentation page 'sweeps'"),
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


# ---------------------------------------------------------------- the frictions of issue 28: each message, each exit code
def test_derive_refuses_a_simulated_reference_and_says_so(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalruns import perfect, write_run

    run_dir = write_run(
        tmp_path / "ref", sample_shards, answer=perfect, tokens=lambda row: 430,
        target="simulated", target_evidence="the embedded simulator (no --endpoint)",
    )  # fmt: skip
    code, _, err = run(["profiles", "derive", str(run_dir), "--name", "mine"], capsys)
    assert code == 1 and "Traceback" not in err
    assert "ref: it was simulated: measured against trajbench's simulator (the embedded simulator" in err
    assert "--allow-unofficial" in err
    code, _, err = run(["profiles", "derive", str(run_dir), "--name", "mine", "--osl-tolerance", "10"], capsys)
    assert code == 1 and "--osl-tolerance 10: a fraction of the reference mean" in err and "write 0.1" in err
    code, out, err = run(
        ["profiles", "derive", str(run_dir), "--name", "mine", "--osl-tolerance", "0.05", "--allow-unofficial"], capsys
    )
    assert code == 0 and "Warning: not official-shaped: ref: it was simulated" in err
    assert "osl_min: 408.5" in out and "osl_max: 451.5" in out  # 430 ± 5 %, the unit the file records


def test_derive_says_a_zero_reference_score_is_answers_that_did_not_match(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalruns import write_run

    def silent(row: object) -> dict[str, object]:
        return {"content": "", "reasoning": "", "tool_calls": []}

    run_dir = write_run(tmp_path / "ref", sample_shards, answer=silent, tokens=lambda row: 430)
    code, _, err = run(["profiles", "derive", str(run_dir), "--name", "mine", "--allow-unofficial"], capsys)
    assert code == 1 and "inline score is 0: none of the reference model's answers matched" in err
    assert "write 0.55 for 55 %" not in err


def test_a_wrong_format_is_said_once_with_the_one_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).parent.parent / "traces" / "data" / "sample.jsonl"
    code, _, err = run(["traces", "validate", str(sample), "--format", "openai-messages"], capsys)
    assert code == 1
    (line, last) = err.splitlines()
    assert "not --format openai-messages" in line and line.endswith("pass --format mlperf-jsonl")
    assert "conversation_id, turn, role, content" in line and last.startswith("Error: 1 error(s)")


def test_replay_run_given_a_list_points_to_replay_sweep(
    sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["replay", "run", str(sample_shards), "-c", "1,2,4"], capsys)
    assert code == 2
    assert (
        "'1,2,4' is a list: `replay run` measures one concurrency; `trajbench replay sweep SHARDS_DIR -c 1,2,4" in err
    )


def test_sweep_add_with_other_settings_names_the_setting(
    sample_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["replay", "sweep", str(sample_shards), "--out", str(tmp_path / "s"), "--progress", "none"]
    fast = ["--sim-args", "--step-base-ms 0 --prefill-ms-per-token 0 --batch-ms-per-seq 0"]
    code, _, err = run([*base, "-c", "2", "--no-delays", *fast], capsys)
    assert code == 0, err
    code, _, err = run([*base, "-c", "4", "--add", *fast], capsys)  # delays on this time
    assert code == 1
    assert "holds a sweep with other settings: --no-delays (inject_delays false in the sweep, true here)" in err
    assert "(--add)" in err


def test_the_listings_fit_80_columns(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`profiles`, `eval check` and report.txt read on an 80-column terminal; counts have separators."""
    from evalruns import official_run

    from eval import osl_gate, score_run

    code, out, _ = run(["profiles"], capsys)
    assert code == 0 and max(map(len, out.splitlines())) <= 80 and "355-434 output tokens per turn" in out
    judged = official_run(tmp_path / "c4", sample_shards)
    score_run(judged)
    osl_gate(judged)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["eval", "check", "c4"], capsys)
    assert code == 1 and max(map(len, out.splitlines())) <= 80
    lines = out.splitlines()
    assert lines[0] == "c4: 1 of 19 checks failed" and lines[1].startswith("  FAIL  dataset ")  # failures first
    assert "submission: 1 of 2 checks failed" in out and err.startswith("Error: 2 of 21 compliance checks failed")
