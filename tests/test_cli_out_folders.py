"""Every command that writes refuses an unwritable `--out` with one `Error:` line and the fix,
never a traceback: a path under /proc or /sys (refused even to root), or one blocked by a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from clirun import trajbench

SAMPLE = Path(__file__).resolve().parent.parent / "traces" / "data" / "sample.jsonl"
CLOSED = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, sample_shards: Path) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    done = trajbench(
        "replay", "run", str(sample_shards), "--no-delays", "--out", str(out), "--sim-args", "--osl-mean 4"
    )
    assert (out / "performance" / "result_summary.json").is_file(), done.err
    return out


def _places(tmp_path: Path) -> dict[str, Path]:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    return {"proc": Path("/proc/trajbench-test/out"), "sys": Path("/sys/trajbench-test/out"), "file": blocker / "out"}


COMMANDS = {
    "traces card": lambda out, shards, run: ["traces", "card", str(shards), "--out", str(out / "card.md")],
    "traces build": lambda out, shards, run: ["traces", "build", str(SAMPLE), "--out", str(out)],
    "traces stats": lambda out, shards, run: ["traces", "stats", str(shards), "--out", str(out)],
    "replay run": lambda out, shards, run: ["replay", "run", str(shards), "--endpoint", CLOSED, "--out", str(out)],
    "replay sweep": lambda out, shards, run: [
        "replay",
        "sweep",
        str(shards),
        "-c",
        "1",
        "--endpoint",
        CLOSED,
        "--out",
        str(out),
    ],
    "report": lambda out, shards, run: ["report", str(run), "--out", str(out)],
    "explore": lambda out, shards, run: ["explore", str(run), "--out", str(out)],
}


#: every command under /proc in the fast suite; the other places (one command each) with the slow tests
CASES = [
    pytest.param(command, place, marks=[] if place == "proc" else [pytest.mark.slow])
    for command in sorted(COMMANDS)
    for place in ("proc", "file")
] + [pytest.param("traces build", "sys", marks=pytest.mark.slow)]


@pytest.mark.parametrize(("command", "place"), CASES)
def test_unwritable_out_folder(command: str, place: str, tmp_path: Path, sample_shards: Path, run_dir: Path) -> None:
    out = _places(tmp_path)[place]
    argv = COMMANDS[command](out, sample_shards, run_dir)
    out = Path(argv[argv.index("--out") + 1])
    done = trajbench(*argv)
    assert done.code == 1, done.err
    assert "Traceback" not in done.err, done.err
    assert len(done.error_lines) == 1, done.err
    line = done.error_lines[0]
    assert line.startswith(f"Error: --out {out}: cannot write here ("), line
    assert line.endswith("; choose a writable location for --out"), line
    if place == "file":
        assert "(part of the path is a file, not a folder)" in line


@pytest.mark.parametrize(
    "args",
    [
        ["traces", "export", "{shards}", "--out", "/proc/trajbench-test/x.jsonl"],
        pytest.param(
            ["traces", "synth", "--scale", "0.01", "--out", "/proc/trajbench-test/x.jsonl"], marks=pytest.mark.slow
        ),
    ],
    ids=["export", "synth"],
)
def test_unwritable_output_file(args: list[str], sample_shards: Path) -> None:
    done = trajbench(*[a.replace("{shards}", str(sample_shards)) for a in args])
    assert done.code == 1, done.err
    assert "Traceback" not in done.err, done.err
    assert len(done.error_lines) == 1 and "/proc/trajbench-test/" in done.error_lines[0]
    assert done.error_lines[0].endswith("check the path and that its folder is writable")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        done = trajbench("traces", "build", str(SAMPLE), "--out", str(ro / "shards"))
    finally:
        ro.chmod(0o755)
    assert done.code == 1 and done.error_lines == [
        f"Error: --out {ro / 'shards'}: cannot write here (Permission denied); choose a writable location for --out"
    ]
