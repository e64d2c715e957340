"""A run where nothing can work stops before it starts (the preflight check: the models list, then
one tiny streamed request) and says what to fix, without touching the run folder."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hostile import Conn, HostileServer, Request, answer, json_response, ok_stream
from reliability_helpers import cli_in_process

from replay.results.records import read_records


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A port nothing answers on: bound for the test (so no other test, in this process or a
    parallel one, can take it) but never listening, so a connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def _status(status: int, message: str) -> Callable[[Conn, Request, int], bool]:
    def behave(conn: Conn, req: Request, n: int) -> bool:
        return conn.send(json_response(status, {"error": {"message": message}}))

    return behave


def test_an_endpoint_that_is_down_fails_before_the_run_and_creates_nothing(
    make_shards: Callable[..., Path], tmp_path: Path, capsys, dead_port: int
) -> None:
    port = dead_port
    out = tmp_path / "run"
    code, _stdout, stderr = cli_in_process(
        ["replay", "run", str(make_shards({"t": [0.0]})), "--endpoint", f"http://127.0.0.1:{port}", "--out", str(out)],
        capsys,
    )
    assert code == 1
    assert stderr.startswith(f"Error: preflight: cannot connect to http://127.0.0.1:{port}/v1/models: ")
    assert (
        "is the server up and listening there? check --endpoint; to start the run anyway, pass --skip-preflight"
        in stderr
    )
    assert not out.exists() and "Traceback" not in stderr


def test_a_model_the_server_does_not_serve_is_named_with_the_served_ones(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    """--model given: sent as given, and the engine's own refusal is quoted beside the served list."""
    with HostileServer(
        _status(200, "unused"),
        models=("org/served-a", "org/served-b"),
        preflight=_status(404, "The model `moonshotai/Kimi-K3` does not exist."),
    ) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"t": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run"),
             "--model", "moonshotai/Kimi-K3"],
            capsys,
        )  # fmt: skip
    assert code == 1 and srv.requests == 0  # no turn was sent
    assert (
        f"Error: preflight: POST {srv.url}/v1/chat/completions (model 'moonshotai/Kimi-K3', 16 tokens) failed: http: "
        "HTTP 404: The model `moonshotai/Kimi-K3` does not exist.; "
        "the server does not serve model 'moonshotai/Kimi-K3' (it lists: org/served-a, org/served-b); pass --model NAME"
        in stderr
    )
    assert not (tmp_path / "run").exists()


def test_with_several_served_models_and_not_the_profiles_none_is_guessed(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    with HostileServer(_status(200, "unused"), models=("org/served-a", "org/served-b")) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"t": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run")],
            capsys,
        )
        assert (srv.preflights, srv.requests) == (0, 0)  # refused before any request
    assert code == 1 and stderr == (
        f"Error: preflight: {srv.url} does not serve the profile's model name 'moonshotai/Kimi-K3'; it serves 2 models "
        "(org/served-a, org/served-b): pass --model NAME with the one to measure; to start the run anyway, pass "
        "--skip-preflight\n"
    )
    assert not (tmp_path / "run").exists()


def _models_sent(bodies: list[bytes]) -> Callable[[Conn, Request, int], bool]:
    def behave(conn: Conn, req: Request, n: int) -> bool:
        bodies.append(req.body)
        return conn.send(ok_stream("fine ", "answer"))

    return behave


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.slow
def test_the_endpoints_only_model_is_used_when_the_profiles_is_not_served(
    make_shards: Callable[..., Path], tmp_path: Path, capsys, skip: bool
) -> None:
    """vLLM serves a model under the name it was started with: without --model, the profile's
    name would get HTTP 404 on every turn. The endpoint lists one model: that one is sent (also
    with --skip-preflight, which reads the list too), run.json and the report say so."""
    bodies: list[bytes] = []
    with HostileServer(_models_sent(bodies), models=("SmolLM2-135M-Instruct",), preflight=_models_sent(bodies)) as srv:
        code, stdout, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"a": [0.0, 0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run"),
             *(["--skip-preflight"] if skip else [])],
            capsys,
        )  # fmt: skip
    assert code == 0, stderr
    assert [json.loads(b)["model"] for b in bodies] == ["SmolLM2-135M-Instruct"] * (2 if skip else 3)
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (cfg["model"], cfg["model_source"]) == ("SmolLM2-135M-Instruct", "served")
    report = " ".join(stdout.split())  # wrapped at the terminal's width, whatever it is
    assert (
        "profile kimi-k3 (model SmolLM2-135M-Instruct: the endpoint's only model, the profile's name is not served)"
        in report
    )


@pytest.mark.parametrize(
    ("models", "given", "sent", "source"),
    [
        (("moonshotai/Kimi-K3", "other"), None, "moonshotai/Kimi-K3", "profile"),  # the profile's is served
        (None, None, "moonshotai/Kimi-K3", "profile"),  # no list: the profile's, the answer decides
        (("only",), "mine", "mine", "option"),  # --model is sent as given
    ],
)
def test_the_model_name_is_the_given_one_or_the_profiles_when_served(
    make_shards: Callable[..., Path],
    tmp_path: Path,
    capsys,
    models: tuple[str, ...] | None,
    given: str | None,
    sent: str,
    source: str,
) -> None:
    bodies: list[bytes] = []
    with HostileServer(_models_sent(bodies), models=models, preflight=_models_sent(bodies)) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"a": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run"),
             *(["--model", given] if given else [])],
            capsys,
        )  # fmt: skip
    assert code == 0, stderr
    assert {json.loads(b)["model"] for b in bodies} == {sent}
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (cfg["model"], cfg["model_source"]) == (sent, source)


def test_a_refused_api_key_is_named(make_shards: Callable[..., Path], tmp_path: Path, capsys) -> None:
    def refuse(conn: Conn, req: Request, n: int) -> bool:
        return conn.send(json_response(401, {"error": {"message": "invalid api key"}}))

    # GET /v1/models answers 404 here: not fatal, the chat request decides
    with HostileServer(refuse, models=None, preflight=refuse) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"t": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run")],
            capsys,
        )
    assert code == 1 and srv.requests == 0
    assert (
        "HTTP 401: invalid api key" in stderr
        and "the API key is missing or wrong" in stderr
        and "--api-key-env" in stderr
    )


def test_a_server_that_does_not_stream_fails_the_preflight(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    def plain_json(conn: Conn, req: Request, n: int) -> bool:
        return conn.send(json_response(200, {"choices": [{"message": {"content": "ready"}}]}))

    with HostileServer(_status(200, "unused"), preflight=plain_json) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"t": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run")],
            capsys,
        )
    assert code == 1 and "failed: malformed: the server answered application/json, not an SSE stream" in stderr


def test_a_failing_preflight_leaves_an_old_run_folder_as_it_was(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    shards = make_shards({"t": [0.0]})
    out = tmp_path / "run"
    with HostileServer(lambda conn, req, n: conn.send(json_response(200, {}))) as srv:
        pass
    out.mkdir()
    (out / "run.json").write_text('{"old": true}')
    (out / "records.jsonl").write_text("")
    code, _, _ = cli_in_process(
        ["replay", "run", str(shards), "--endpoint", srv.url, "--out", str(out), "--overwrite"], capsys
    )
    assert code == 1
    assert json.loads((out / "run.json").read_text()) == {"old": True} and sorted(p.name for p in out.iterdir()) == [
        "records.jsonl",
        "run.json",
    ]


def test_skip_preflight_starts_against_a_dead_endpoint_and_the_run_exits_3(
    make_shards: Callable[..., Path], tmp_path: Path, capsys, dead_port: int
) -> None:
    out = tmp_path / "run"
    code, _, stderr = cli_in_process(
        [
            "replay",
            "run",
            str(make_shards({"a": [0.0]})),
            "--endpoint",
            f"http://127.0.0.1:{dead_port}",
            "--out",
            str(out),
            "--skip-preflight",
        ],
        capsys,
    )
    assert code == 3 and "Error: the 1 issued turn failed (connect 1)" in stderr
    assert json.loads((out / "run.json").read_text())["preflight"] == {
        "checked": False,
        "served_models": None,
        "keep_alive": None,
    }


def test_a_passed_preflight_is_recorded(make_shards: Callable[..., Path], tmp_path: Path, capsys) -> None:
    with HostileServer(answer, models=("m1",)) as srv:
        code, _, stderr = cli_in_process(
            ["replay", "run", str(make_shards({"a": [0.0]})), "--endpoint", srv.url, "--out", str(tmp_path / "run")],
            capsys,
        )
        assert (srv.preflights, srv.requests) == (1, 1)
    assert code == 0, stderr
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (cfg["preflight"], cfg["target"], cfg["target_evidence"]) == (
        {"checked": True, "served_models": ["m1"], "keep_alive": True},
        "real",
        None,
    )


def _answer_then_close(conn: Conn, req: Request, n: int) -> bool:
    """llama.cpp's server: a streamed answer advertised as keep-alive, then the socket closed —
    here 50 ms later, so a client that reuses it at once writes the next turn into a dying socket."""
    conn.send(ok_stream("fine ", "answer"))
    time.sleep(0.05)
    return False


def _answer_and_close(conn: Conn, req: Request, n: int) -> bool:
    """The same server's answer to the preflight, its close right behind it: the preflight waits
    0.1 s for a close, which the turns' 50 ms (plus a loaded machine's scheduling) could miss."""
    conn.send(ok_stream("fine ", "answer"))
    return False


def test_a_server_that_closes_after_each_answer_gets_a_connection_per_turn(
    make_shards: Callable[..., Path], tmp_path: Path, capsys
) -> None:
    with HostileServer(_answer_then_close, preflight=_answer_and_close) as srv:
        code, _, stderr = cli_in_process(
            [
                "replay",
                "run",
                str(make_shards({"a": [0.0] * 6})),
                "--endpoint",
                srv.url,
                "--out",
                str(tmp_path / "run"),
            ],
            capsys,
        )
        assert (srv.preflights, srv.requests) == (1, 6)
    assert code == 0, stderr  # no turn lost to a socket the server was closing
    assert [r.error_kind for r in read_records(tmp_path / "run")] == [None] * 6
    assert json.loads((tmp_path / "run" / "run.json").read_text())["preflight"]["keep_alive"] is False


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_the_help_says_what_is_checked_and_how_to_skip_it(command: str, capsys) -> None:
    code, stdout, _ = cli_in_process(["replay", command, "--help"], capsys)
    text = " ".join(stdout.split())
    assert (
        code == 0
        and "Before the first turn the endpoint is checked (GET /v1/models, then one tiny streamed request" in text
    )
    assert "--skip-preflight starts without it" in text and "the endpoint failed the preflight check" in text
