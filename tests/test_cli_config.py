"""`replay run` / `replay sweep --config FILE`: a YAML or JSON file of options, or a finished run's
run.json, which replays that run. The command line wins over the file; a bad file is one
`Error:` line naming the file, the line and the key, and what to do.

Most cases stop at the job the CLI hands its `RunConfig` to (what the options were parsed into);
the round trip runs for real against the embedded simulator, twice."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

import cli
import jobs
import traces
from eval import OslResult, Scores
from replay import ResultSummary, RunConfig, RunInfo, Slo, event_loop
from replay.results.records import Record, read_records
from replay.sim import embedded_config

RUN_KEYS = (
    "api_key_env, backend, concurrency, drain_timeout, endpoint, failure_budget, flush_cache, gates, header, max_completion_tokens, max_event_mb, "
    "max_header_kb, max_idle, max_response_mb, memory_budget_mb, min_workers, model, no_delays, no_session_header, out, "
    "overwrite, profile, "
    "progress, ray_address, ray_resource, replica_header, session_slo, shards, sim_args, skip_preflight, slo, "
    "stop_at_window_end, tokenizer, trajectories, turn_timeout, workers"
)


class Captured(Exception):
    def __init__(self, config: RunConfig, levels: Any = None, gates: str | None = None) -> None:
        self.config, self.levels, self.gates = config, levels, gates


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs stop with the config the command built (nothing is replayed)."""

    async def run(config: RunConfig, gates: str = "official") -> Any:
        raise Captured(config, gates=gates)

    async def sweep(config: RunConfig, levels: Any, out: Any, echo: Any = None, **kw: Any) -> Any:
        raise Captured(config, levels, kw.get("gates"))

    monkeypatch.setattr(jobs, "scored_run", run)
    monkeypatch.setattr(jobs, "scored_sweep", sweep)


def config_of(argv: list[str]) -> Captured:
    with pytest.raises(Captured) as caught:
        cli.cli.main(args=argv, prog_name="trajbench", standalone_mode=False)
    return caught.value


def write(path: Path, values: dict[str, Any]) -> Path:
    """The options as YAML or JSON, by the file's suffix."""
    path.write_text(json.dumps(values) if path.suffix == ".json" else yaml.safe_dump(values), encoding="utf-8")
    return path


def error_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ended:
        cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return int(ended.value.code or 0), err


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_the_file_sets_options_and_the_command_line_wins(
    suffix: str, tmp_path: Path, sample_shards: Path, captured: None
) -> None:
    cfg = write(
        tmp_path / f"opts{suffix}",
        {
            "shards": str(sample_shards),
            "concurrency": 3,
            "turn_timeout": 45,
            "no_delays": True,
            "header": ["X-Team"],
            "profile": "qwen3.6-35b-a3b",
            "sim_args": "--seed 7",
        },
    )
    from_file = config_of(["replay", "run", "--config", str(cfg)]).config
    assert (from_file.shards, from_file.concurrency, from_file.turn_timeout) == (str(sample_shards), 3, 45.0)
    assert (from_file.inject_delays, from_file.headers, from_file.profile) == (False, ("X-Team",), "qwen3.6-35b-a3b")
    assert from_file.sim == embedded_config(str(sample_shards.resolve()), ["--seed", "7"])

    argv = ["replay", "run", "--config", str(cfg), "-c", "5", "--turn-timeout", "9", "--profile", "kimi-k3"]
    overridden = config_of([*argv, "--no-session-header", "--sim-args", "--seed 8"]).config
    assert (overridden.concurrency, overridden.turn_timeout, overridden.profile) == (5, 9.0, "kimi-k3")
    assert overridden.headers == ()  # --no-session-header beats the file's header, not an error
    assert overridden.sim is not None and overridden.sim.seed == 8
    assert overridden.inject_delays is False  # what the command line does not say, the file still does


def test_a_sweep_takes_its_concurrencies_from_the_file_unless_told(
    tmp_path: Path, sample_shards: Path, captured: None
) -> None:
    cfg = write(tmp_path / "sweep.yaml", {"shards": str(sample_shards), "concurrency": [1, 2, 4], "workers": 1})
    assert config_of(["replay", "sweep", "--config", str(cfg), "--out", str(tmp_path / "s")]).levels == [1, 2, 4]
    regions = config_of(["replay", "sweep", "--config", str(cfg), "--regions", "--max-concurrency", "8", "--out", "x"])
    assert regions.levels[0] == 1 and regions.levels[-1] == 8  # --regions beats the file's list


def test_a_sweeps_folder_may_come_from_the_file_but_must_come(
    tmp_path: Path, sample_shards: Path, captured: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write(tmp_path / "sweep.yaml", {"shards": str(sample_shards), "concurrency": [1, 2], "gates": "off"})
    code, err = error_of(["replay", "sweep", "--config", str(cfg)], capsys)
    assert code == 2 and "Missing option '--out' (or `out` in the --config file)." in err
    write(cfg, {"shards": str(sample_shards), "concurrency": [1, 2], "gates": "off", "out": str(tmp_path / "s")})
    swept = config_of(["replay", "sweep", "--config", str(cfg)])
    assert (swept.levels, swept.gates, swept.config.out) == ([1, 2], "off", None)  # points get their own folders


def test_an_unknown_key_lists_the_valid_ones(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "opts.yaml"
    cfg.write_text(f"shards: {sample_shards}\nconcurrency: 2\nturn-timeout: 30\n", encoding="utf-8")
    code, err = error_of(["replay", "run", "--config", str(cfg)], capsys)
    assert code == 1
    assert err.splitlines() == [
        f"Error: {cfg}:3: unknown key 'turn-timeout' (did you mean turn_timeout?); valid keys: {RUN_KEYS}"
    ]
    code, err = error_of(["replay", "sweep", "--config", str(cfg), "--out", str(tmp_path / "s")], capsys)
    assert code == 1 and "max_concurrency" in err and "regions" in err  # each command lists its own


@pytest.mark.parametrize(
    ("name", "text", "line", "message"),
    [
        (
            "o.yaml",
            "concurrency: 2\nturn_timeout: soon\n",
            2,
            'turn_timeout: expected a finite number > 0, found "soon"',
        ),
        ("o.yaml", "concurrency: true\n", 1, "concurrency: expected an integer >= 1, found true"),
        ("o.yaml", "no_delays: 1\n", 1, "no_delays: expected true or false, found 1"),
        ("o.json", '{\n  "concurrency": "8"\n}', 2, 'concurrency: expected an integer >= 1, found "8"'),
        (
            "o.json",
            '{"profile": "gpt-9"}',
            1,
            "profile: unknown profile 'gpt-9'; choose one of kimi-k2.6, kimi-k3, qwen3.6-35b-a3b (or load a user profile",
        ),
        ("o.json", '{"workers": 0}', 1, "workers: expected an integer >= 1, found 0; fix the value"),
        ("o.yaml", "backend: slurm\n", 1, 'backend: expected one of auto, process, ray, found "slurm"; fix the value'),
    ],
)
def test_a_value_of_the_wrong_type_names_the_file_and_the_key(
    name: str, text: str, line: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / name
    cfg.write_text(text, encoding="utf-8")
    code, err = error_of(["replay", "run", "--config", str(cfg)], capsys)
    assert code == 1
    assert err.startswith(f"Error: {cfg}:{line}: {message}") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- 1\n- 2\n", "expected a mapping of option names to values (e.g. `concurrency: 8`), found a list"),
        ("concurrency: [\n", "not valid YAML"),
        ("concurrency: 2\nconcurrency: 3\n", "the key 'concurrency' is given twice (first on line 1); keep one"),
        ("shards: /nowhere/at/all\n", "shards: no folder /nowhere/at/all; build the shards there"),
    ],
)
def test_a_malformed_file_is_one_error_line(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "o.yml"
    cfg.write_text(text, encoding="utf-8")
    code, err = error_of(["replay", "run", "--config", str(cfg)], capsys)
    assert code == 1 and err.startswith(f"Error: {cfg}") and message in err and err.count("\n") == 1


def test_an_api_key_in_the_file_is_refused_and_never_echoed(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "o.yaml"
    cfg.write_text(f"shards: {sample_shards}\napi_key: sk-do-not-print-me\n", encoding="utf-8")
    code, err = error_of(["replay", "run", "--config", str(cfg)], capsys)
    assert code == 1 and "sk-do-not-print-me" not in err
    assert err.startswith(f"Error: {cfg}:2: 'api_key': an API key is never read from a file")
    assert "api_key_env" in err


def _option_fields(info: RunInfo) -> dict[str, Any]:
    """The fields of run.json that the options decide (the rest are facts of the run)."""
    data = info.to_json()
    keep = (
        "shards", "dataset", "profile", "request_params", "model", "target", "target_evidence", "concurrency",
        "num_trajectories", "inject_delays", "stop_at_window_end", "turn_timeout", "drain_timeout", "headers",
        "workers", "tokenizer", "limits", "max_completion_tokens", "skip_preflight", "api_key_env", "simulator",
    )  # fmt: skip
    return {k: data[k] for k in keep}


@pytest.mark.slow
def test_a_run_replayed_from_its_run_json_has_the_same_options(
    tmp_path: Path, sample_shards: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRAJBENCH_TEST_KEY", "sk-never-written")
    first = tmp_path / "first"
    argv = [
        "replay", "run", str(sample_shards), "-c", "3", "--trajectories", "20", "--no-delays", "--stop-at-window-end",
        "--turn-timeout", "77", "--drain-timeout", "3", "--header", "X-A", "--header", "X-B", "--skip-preflight",
        "--max-completion-tokens", "4000", "--max-response-mb", "32", "--max-event-mb", "4", "--max-header-kb", "32",
        "--api-key-env", "TRAJBENCH_TEST_KEY", "--sim-args", "--seed 3 --replicas 2", "--out", str(first),
        "--slo", "ttft_ms=60000,tpot_ms=1000", "--session-slo", "3600", "--gates", "dataset", "--flush-cache",
    ]  # fmt: skip
    cli.main(argv)
    out = capsys.readouterr().out
    assert out.startswith(
        "target: embedded simulator — oracle answers from the shards, step model 64× faster, 2 replicas (affinity "
        "router); pass --endpoint to measure a server, --sim-args to change it\n"
    )
    assert "PASS: research gate (dataset-derived) needs" in out  # oracle answers: the inline gate passes
    was = RunInfo.read(first)
    # every option differs from its default, so a mapping that drops one fails below
    assert (was.concurrency, was.num_trajectories, was.inject_delays, was.stop_at_window_end) == (3, 20, False, True)
    assert (was.turn_timeout, was.drain_timeout, was.headers, was.skip_preflight) == (77.0, 3.0, ["X-A", "X-B"], True)
    assert (was.max_completion_tokens, was.api_key_env, was.limits.max_event_bytes) == (
        4000,
        "TRAJBENCH_TEST_KEY",
        4 << 20,
    )
    assert was.simulator is not None and (was.simulator.seed, was.simulator.replicas) == (3, 2)
    assert was.simulator.oracle_repeats == 5  # 20 instances of 4 trajectories: every repeat is answered
    assert was.api_key_given and "sk-never-written" not in (first / "run.json").read_text()
    assert was.event_loop == event_loop()  # the loop the CLI ran the replay on (replay.client.eventloop)
    # the SLOs are recorded and judge goodput (generous limits: every turn of the simulator meets them)
    assert was.slo == Slo(60000.0, 1000.0, 3600.0)
    assert was.cache_flush is not None and (was.cache_flush.route, was.cache_flush.status) == (
        "POST /reset_prefix_cache",
        200,
    )
    ours = ResultSummary.read(first).trajbench
    assert ours.goodput is not None and ours.goodput.turns_met == ours.goodput.turns > 0
    assert ours.goodput.output_tokens_per_s == ours.throughput.output_tokens_per_s
    # --stop-at-window-end cuts sessions short: those are not judged, and counted (docs/metrics.md)
    lengths = {i.trajectory_id: len(i.turns) for i in traces.Shards(sample_shards)}
    sent: dict[str, list[Record]] = {}
    for r in read_records(first):
        sent.setdefault(r.instance_id, []).append(r)
    cut = sum(1 for rs in sent.values() if len(rs) < lengths[rs[0].trajectory_id])
    assert ours.goodput.sessions_incomplete == cut and ours.goodput.sessions == len(sent) - cut
    assert "goodput (SLO TTFT 60000 ms, TPOT 1000 ms, session 3600 s)" in out

    again = tmp_path / "again"
    cli.main(["replay", "run", "--config", str(first / "run.json"), "--out", str(again)])
    capsys.readouterr()
    now = RunInfo.read(again)
    assert _option_fields(now) == _option_fields(was)
    # judged by the same gates: a run that passed under research gates is not replayed under
    # the official ones (where its OSL gate would fail)
    assert Scores.read(first).gates.mode == Scores.read(again).gates.mode == "dataset"
    assert OslResult.read(again).gates.mode == "dataset"
    assert now.cache_flush is not None  # --flush-cache is replayed too
    assert now.started_at >= was.started_at and now.endpoint != "" and now.target == "simulated"


#: A value other than the default for every option `replay run` records (argv words by key),
#: against the embedded simulator; `endpoint` and `no_session_header` are the second case's. A
#: new option is added here, or the test below says it was left out of the round trip.
NOT_DEFAULTS = {
    "profile": ["--profile", "qwen3.6-35b-a3b"],
    "model": ["--model", "served-name"],
    "trajectories": ["--trajectories", "20"],
    "no_delays": ["--no-delays"],
    "stop_at_window_end": ["--stop-at-window-end"],
    "turn_timeout": ["--turn-timeout", "77"],
    "max_idle": ["--max-idle", "2"],
    "drain_timeout": ["--drain-timeout", "3"],
    "header": ["--header", "X-A", "--header", "X-B"],
    "workers": ["--workers", "2"],
    "backend": ["--backend", "ray"],
    "ray_address": ["--ray-address", "10.0.0.1:6379"],
    "ray_resource": ["--ray-resource", "gpu-node"],
    "min_workers": ["--min-workers", "2"],
    "tokenizer": ["--tokenizer", "qwen3.6"],
    "api_key_env": ["--api-key-env", "TRAJBENCH_TEST_KEY"],
    "sim_args": ["--sim-args", "--seed 3 --replicas 2 --fail-kinds 500,reset --cache-tokens unlimited"],
    "max_completion_tokens": ["--max-completion-tokens", "4000"],
    "skip_preflight": ["--skip-preflight"],
    "max_response_mb": ["--max-response-mb", "32"],
    "memory_budget_mb": ["--memory-budget-mb", "128"],
    "max_event_mb": ["--max-event-mb", "4"],
    "max_header_kb": ["--max-header-kb", "32"],
    "slo": ["--slo", "ttft_ms=2000,tpot_ms=50"],
    "session_slo": ["--session-slo", "600"],
    "replica_header": ["--replica-header", "X-Sim-Replica"],
    "flush_cache": ["--flush-cache"],
    "failure_budget": ["--failure-budget", "3"],
    "concurrency": ["-c", "3"],
    "gates": ["--gates", "dataset"],
}
WITH_ENDPOINT = {"endpoint": ["--endpoint", "http://127.0.0.1:9"], "no_session_header": ["--no-session-header"]}


@pytest.mark.parametrize(
    ("command", "options"), [("run", jobs.SCORED_RUN_OPTIONS), ("sweep", jobs.SCORED_SWEEP_OPTIONS)]
)
def test_the_command_line_is_made_from_the_declarations(
    command: str, options: tuple[traces.Option, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    params = {p.name: p for p in cli.replay_group.commands[command].params}
    in_order = [name for o in options for name in (("profile_files",) if o.kind == "profile" else ()) + (o.key,)]
    assert list(params) == ["config", *in_order]  # --help lists them as declared
    declared = {o.key: o for o in options}
    for key, option in declared.items():
        param = params[key]
        assert param.default == (option.default if not option.multiple else None) or option.kind == "argument"
        if option.kind != "argument":
            assert isinstance(param, click.Option) and param.help == option.help
    cli.main(["replay", command, "--help"])
    shown = "".join(capsys.readouterr().out.split())  # rewrapped, maybe at a hyphen
    for option in options:
        assert "".join(option.help.split()) in shown, option.key  # every help text, as declared


def test_every_option_but_the_display_and_the_folder_is_recorded() -> None:
    recorded = {o.key for o in jobs.SCORED_RUN_OPTIONS if o.recorded}
    assert recorded == {"shards", *NOT_DEFAULTS, *WITH_ENDPOINT}
    assert {o.key for o in jobs.SCORED_RUN_OPTIONS if not o.recorded} == {"out", "overwrite", "progress"}


@pytest.mark.parametrize("case", ["simulator", "endpoint"])
def test_every_option_round_trips_through_run_json(
    case: str, tmp_path: Path, sample_shards: Path, captured: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """options → RunConfig → run.json → `--config run.json` → the same RunConfig and gates."""
    monkeypatch.setenv("TRAJBENCH_TEST_KEY", "sk-never-written")
    words = (
        NOT_DEFAULTS
        if case == "simulator"
        else {k: v for k, v in NOT_DEFAULTS.items() if k not in ("header", "sim_args")} | WITH_ENDPOINT
    )
    argv = [
        str(sample_shards),
        *(w for piece in words.values() for w in piece),
        "--out",
        str(tmp_path / "x"),
        "--progress",
        "none",
    ]
    first = config_of(["replay", "run", *argv])
    assert first.gates == "dataset"
    info = _fake_run_json(tmp_path / "run", sample_shards, jobs.judged_by(first.config, first.gates or ""))
    assert info.options is not None and "sk-never-written" not in (tmp_path / "run" / "run.json").read_text()
    assert set(info.options) == {"shards", *words, *(("no_session_header",) if case == "simulator" else ())}
    again = config_of(["replay", "run", "--config", str(tmp_path / "run" / "run.json")])
    assert again.gates == first.gates
    assert again.config == replace(first.config, out=None, progress="auto")  # what says nothing of the run
    assert again.config.api_key == "sk-never-written"  # read again from the variable the run named
    if case == "simulator":
        assert again.config.sim is not None and (again.config.sim.seed, again.config.sim.cache_tokens) == (3, None)


def test_a_run_json_without_recorded_options_says_what_to_do(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = _fake_run_json(tmp_path / "run", sample_shards)
    replace(info, options=None).write(tmp_path / "run")
    code, err = error_of(["replay", "run", "--config", str(tmp_path / "run" / "run.json")], capsys)
    assert code == 1 and "which did not record the run's options; pass them on the command line" in err


def test_a_run_json_whose_shards_changed_is_refused(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str], captured: None
) -> None:
    shards = tmp_path / "shards"
    traces.build_shards([str(traces_sample())], shards, traces.BuildOptions(name="sample"))
    info = _fake_run_json(tmp_path / "run", shards)
    rebuilt = traces.build_shards(
        [str(traces_sample())], shards, traces.BuildOptions(name="sample", salt="strong", seed=1), overwrite=True
    )
    assert rebuilt.manifest.content_hash != info.dataset.content_hash
    code, err = error_of(["replay", "run", "--config", str(tmp_path / "run" / "run.json")], capsys)
    assert code == 1
    assert err.startswith(f"Error: {tmp_path / 'run' / 'run.json'}: the run replayed content hash ")
    assert "would not be the same run; rebuild the shards" in err and err.count("\n") == 1
    # named on the command line, other shards are the user's choice: a note, and the run starts
    named = config_of(["replay", "run", str(shards), "--config", str(tmp_path / "run" / "run.json")])
    assert named.config.shards == str(shards) and named.config.concurrency == 2
    assert "these are the run's options over other rows, not the same run" in capsys.readouterr().err
    # a folder holding the same rows is the same dataset: no note
    config_of(["replay", "run", str(sample_shards), "--config", str(tmp_path / "run" / "run.json")])
    assert capsys.readouterr().err == ""


def traces_sample() -> Path:
    return Path(traces.__file__).parent / "data" / "sample.jsonl"


def _fake_run_json(run_dir: Path, shards: Path, config: RunConfig | None = None) -> RunInfo:
    """A run.json as `replay run` writes it, without running (its facts do not matter here)."""
    from replay.run import run_info

    config = config or RunConfig(shards=str(shards), concurrency=2, sim=embedded_config(str(shards.resolve())))
    s = traces.Shards(shards)
    run_dir.mkdir()
    info = run_info(
        config, s, traces.get_profile(config.profile), "http://127.0.0.1:1", "simulated", 4, simulator=config.sim
    )
    info.write(run_dir)
    return info


def test_an_api_key_given_as_the_variable_name_is_refused_and_never_written(
    tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write(tmp_path / "opts.yaml", {"api_key_env": "sk-proj-SECRET123"})
    for argv in (
        ["replay", "run", str(sample_shards), "--api-key-env", "sk-proj-SECRET123", "--out", str(tmp_path / "r")],
        ["replay", "run", str(sample_shards), "--config", str(cfg), "--out", str(tmp_path / "r")],
        ["replay", "sweep", str(sample_shards), "-c", "1", "--api-key-env", "sk-proj-SECRET123", "--out", str(tmp_path / "s")],
    ):  # fmt: skip
        code, err = error_of(argv, capsys)
        assert code == 1 and "--api-key-env must name an environment variable" in err
        assert "SECRET123" not in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()


def test_a_run_json_replayed_with_another_profile_sends_that_profiles_model(
    tmp_path: Path, sample_shards: Path, captured: None
) -> None:
    info = _fake_run_json(tmp_path / "run", sample_shards)
    assert info.model == traces.get_profile("kimi-k3").served_model_name  # run.json holds what was sent
    run_json = str(tmp_path / "run" / "run.json")
    other = config_of(["replay", "run", "--config", run_json, "--profile", "qwen3.6-35b-a3b"]).config
    assert (other.profile, other.model) == ("qwen3.6-35b-a3b", None)  # None: the profile's served name
    assert other.num_trajectories is None  # one pass then, one pass of whatever shards now


def test_a_run_json_replays_its_simulator_over_the_shards_being_replayed(
    tmp_path: Path, sample_shards: Path, captured: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded simulator answers from the shards replayed, so a run.json written from a
    relative shards path replays from any folder and over other shards."""
    monkeypatch.chdir(sample_shards.parent)
    config = RunConfig(shards=sample_shards.name, concurrency=2, sim=embedded_config(sample_shards.name))
    from replay.run import run_info

    (tmp_path / "run").mkdir()
    run_info(
        config, traces.Shards(sample_shards), traces.get_profile("kimi-k3"), "http://127.0.0.1:1", "simulated", 4,
        simulator=config.sim,
    ).write(tmp_path / "run")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    replayed = config_of(["replay", "run", "--config", str(tmp_path / "run" / "run.json")]).config
    assert replayed.sim == embedded_config(str(Path(replayed.shards).resolve()))


def test_sim_args_with_an_endpoint_are_refused(sample_shards: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", "run", str(sample_shards), "--endpoint", "http://127.0.0.1:9", "--sim-args", "--seed 3"]
    code, err = error_of(argv, capsys)
    assert code == 2 and "--sim-args configures the embedded simulator, which runs only without --endpoint" in err


def test_a_bad_progress_interval_is_refused_before_the_run_folder_is_made(
    tmp_path: Path, sample_shards: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(traces.PROGRESS_SECONDS_ENV, "abc")
    code, err = error_of(
        ["replay", "run", str(sample_shards), "--progress", "plain", "--out", str(tmp_path / "r")], capsys
    )
    assert code == 1 and f"{traces.PROGRESS_SECONDS_ENV}='abc': not a number of seconds > 0" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_timeout_that_is_not_a_finite_number_is_a_usage_error(
    value: str, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nan passes every comparison and inf is not JSON (run.json): both are refused up front."""
    for option in ("--turn-timeout", "--drain-timeout"):
        code, err = error_of(["replay", "run", str(sample_shards), option, value], capsys)
        assert code == 2 and f"Invalid value for '{option}'" in err and "Traceback" not in err


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_an_options_file_timeout_that_is_not_finite_is_refused(
    value: str, tmp_path: Path, sample_shards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "opts.yaml"
    cfg.write_text(f"shards: {sample_shards}\nturn_timeout: {value}\n", encoding="utf-8")
    code, err = error_of(["replay", "run", "--config", str(cfg)], capsys)
    assert code in (1, 2) and "turn" in err and "finite" in err and "Traceback" not in err
