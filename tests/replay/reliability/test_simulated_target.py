"""A simulated target never looks real: the simulator says so on every response, replay records
`target: simulated` even when `--endpoint` points at a standalone `serve-sim`, and the compliance
check fails every simulated point."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from reliability_helpers import ROOT, cli_command, cli_in_process, cli_process

import traces

ZERO = ["--osl-mean", "8", "--step-base-ms", "0", "--prefill-ms-per-token", "0", "--batch-ms-per-seq", "0"]


@pytest.fixture(scope="module")
def serve_sim() -> Iterator[str]:
    """`trajbench serve-sim --port 0` as its own process; yields its base URL."""
    proc = cli_process(["serve-sim", "--port", "0", *ZERO])
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert " listening on http://" in line, proc.stderr.read() if proc.stderr else line
        yield line.split(" listening on ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_every_simulator_response_says_so(serve_sim: str) -> None:
    for path in ("/health", "/v1/models", "/metrics", "/no-such-route"):
        assert httpx.get(serve_sim + path, timeout=10).headers["X-Simulated"] == "trajbench-sim", path
    chat = httpx.post(
        serve_sim + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}, timeout=10
    )
    assert chat.headers["X-Simulated"] == "trajbench-sim" and chat.json()["system_fingerprint"] == "trajbench-sim"


@pytest.mark.parametrize("skip", [False, True], ids=["preflight", "skip-preflight"])
def test_a_run_against_a_standalone_simulator_is_recorded_simulated_and_never_official(
    skip: bool, serve_sim: str, make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    shards = make_shards({"a": [0.0, 0.0], "b": [0.0]})
    run = tmp_path / "run"
    code, stdout, stderr = cli_in_process(
        [
            "replay",
            "run",
            str(shards),
            "--endpoint",
            serve_sim,
            "--out",
            str(run),
            "--no-delays",
            *(["--skip-preflight"] if skip else []),
        ],
        capsys,
    )
    assert code == 0, stderr
    cfg = json.loads((run / "run.json").read_text())
    assert cfg["target"] == "simulated"
    assert (
        cfg["target_evidence"]
        == "GET /health says simulated; GET /v1/models says simulated; X-Simulated header on GET /health"
    )
    assert "target      simulated" in stdout

    code, out, err = cli_in_process(
        ["eval", "check", str(run), "--json", "--expected-hash", traces.Shards(shards).content_hash], capsys
    )
    assert code == 1 and err.startswith("Error: ")
    target = next(c for c in json.loads(out)["checks"] if c["check"] == "target")
    assert target == {
        "point": str(run),
        "check": "target",
        "passed": False,
        "reason": f"measured against trajbench's simulator ({cfg['target_evidence']}); official points need a real inference server",
    }
    if not skip:
        # run.json holds no settings of a standalone simulator: `analyze cache` recognises its own
        # ~4-characters-per-token units from the records and counts in them (no kimi vocabulary needed)
        code, _, err = cli_in_process(["analyze", "cache", str(run)], capsys)
        assert code == 0, err
        a = json.loads((run / "cache_analysis.json").read_text())
        assert a["simulated"] and a["tokenizer"].startswith("trajbench-sim") and a["count_mismatch_turns"] == 0
        assert "was measured against trajbench's simulator" in err


def test_the_embedded_simulator_is_recorded_as_such(make_shards: Callable[..., Path], tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    code, _, stderr = cli_in_process(
        ["replay", "run", str(make_shards({"a": [0.0]})), "--out", str(run), "--sim-args", " ".join(ZERO)], capsys
    )
    assert code == 0, stderr
    cfg = json.loads((run / "run.json").read_text())
    assert (cfg["target"], cfg["target_evidence"], cfg["preflight"]["checked"]) == (
        "simulated",
        "the embedded simulator (no --endpoint)",
        True,
    )


def test_serve_sim_on_a_port_in_use_says_what_to_do(serve_sim: str) -> None:
    port = serve_sim.rsplit(":", 1)[1]
    done = subprocess.run(
        cli_command(["serve-sim", "--port", port]), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"Error: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "pick another --port (0 = any free port) or stop the process that holds it"
    )
