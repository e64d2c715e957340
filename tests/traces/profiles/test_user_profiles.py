"""User profiles (docs/maintainers.md): a YAML or JSON file of the built-ins' shape, loaded with
--profiles FILE or from $TRAJBENCH_PROFILES, listed with its source, checked field by field, never
shadowing a built-in; and the release folder `traces publish` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import in_process as trajbench

import traces

GOOD = {
    "mine": {
        "description": "mine",
        "served_model_name": "org/Mine",
        "tokenizer": "qwen3.6",
        "sampling": {"temperature": 0.6},
        "max_new_tokens": 4096,
        "chat_template_kwargs": {},
        "thresholds": {"inline": 0.5, "osl_min": 100, "osl_max": 200, "swebench": None},
        "swebench_template": "default",
    }
}

BAD_YAML = """\
mine:
  description: 3
  served_model_name: ""
  tokenizer: nope
  sampling: {temperature: hot, max_tokens: 5}
  max_new_tokens: 0
  chat_template_kwargs: []
  thresholds: {inline: 58, osl_min: 400, osl_max: 300, speed: 1}
  colour: red
"""


def test_a_malformed_profile_names_every_field_with_the_rule_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_YAML)
    code, _, err = trajbench(["profiles", "--profiles", str(bad)], capsys)
    assert code == 1 and "Traceback" not in err
    lines = err.removeprefix("Error: ").splitlines()
    assert all(line.startswith(f"{bad}: profile 'mine': ") for line in lines), lines
    problems = {line.split(": ")[2]: line for line in lines}
    assert set(problems) == {
        "colour",
        "swebench_template",
        "description",
        "served_model_name",
        "tokenizer",
        "sampling",
        "max_new_tokens",
        "chat_template_kwargs",
        "thresholds.speed",
        "thresholds.swebench",
        "thresholds.inline",
        "thresholds.osl_min/osl_max",
    }
    assert "unknown field; remove it" in problems["colour"]
    assert "missing; add it" in problems["swebench_template"]
    assert "unknown tokenizer 'nope'; choose one of" in problems["tokenizer"]
    assert "must be a fraction in (0, 1], got 58; write 0.55 for 55 %" in problems["thresholds.inline"]
    assert "osl_min must be below osl_max" in problems["thresholds.osl_min/osl_max"]
    assert "e.g. max_new_tokens: 8192" in problems["max_new_tokens"]
    # the bad file is not kept: the next command of the process does not trip over it
    assert trajbench(["profiles", "--json"], capsys)[0] == 0


@pytest.mark.parametrize(
    ("name", "text", "want"),
    [
        ("p.yaml", "mine: [\n", "not valid YAML"),
        ("p.json", "{", "not valid JSON"),
        ("p.toml", "x = 1", "a profile file is .json, .yaml or .yml; rename it"),
        ("p.yaml", "- a\n", "a profile file is a mapping of profile name to its fields"),
        ("p.yaml", "My Model: {}\n", "profile 'My Model': name: must be 1-64 lower-case letters"),
    ],
)
def test_a_file_that_is_not_a_profile_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, want: str
) -> None:
    (tmp_path / name).write_text(text)
    code, _, err = trajbench(["profiles", "list", "--profiles", str(tmp_path / name)], capsys)
    assert code == 1 and want in err and "Traceback" not in err


def test_a_user_profile_never_shadows_a_built_in_or_another_user_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shadow = tmp_path / "k3.json"
    shadow.write_text(json.dumps({"kimi-k3": GOOD["mine"]}))
    code, _, err = trajbench(["profiles", "--profiles", str(shadow)], capsys)
    assert code == 1 and "profile 'kimi-k3': name: a built-in profile" in err and "give it a name of its own" in err
    a, b = tmp_path / "a.json", tmp_path / "b.yaml"
    a.write_text(json.dumps(GOOD))
    b.write_text(traces.profile_text(traces.read_profile_file(a)))
    code, _, err = trajbench(["profiles", "--profiles", str(a), "--profiles", str(b)], capsys)
    assert code == 1 and f"profile 'mine': name: already defined in {a}" in err


def test_the_env_folder_is_listed_beside_the_built_ins_with_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "mine.json").write_text(json.dumps(GOOD))
    (folder / "notes.txt").write_text("not a profile")
    monkeypatch.setenv(traces.PROFILES_ENV, str(folder))
    listed = json.loads(trajbench(["profiles", "--json"], capsys)[1])
    assert list(listed) == ["kimi-k2.6", "kimi-k3", "qwen3.6-35b-a3b", "mine"]
    assert listed["mine"]["source"] == str(folder / "mine.json")
    assert {listed[n]["source"] for n in ("kimi-k2.6", "kimi-k3", "qwen3.6-35b-a3b")} == {"built-in"}
    assert listed["mine"]["content_hash"] == traces.get_profile("mine").content_hash()
    code, out, _ = trajbench(["profiles"], capsys)
    assert code == 0 and "mine" in out and "built-in" in out
    # a folder that is not there is an error, not an empty list
    monkeypatch.setenv(traces.PROFILES_ENV, str(tmp_path / "nowhere"))
    code, _, err = trajbench(["profiles"], capsys)
    assert code == 1 and f"{traces.PROFILES_ENV}={tmp_path / 'nowhere'}: no such folder" in err


def test_an_unknown_profile_says_how_to_load_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = trajbench(["replay", "run", str(tmp_path), "--profile", "gpt-9"], capsys)
    assert code == 2
    assert "Invalid value for '--profile': unknown profile 'gpt-9'" in err and "--profiles FILE" in err


def test_traces_show_uses_a_user_profiles_request_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sample_shards: Path
) -> None:
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(GOOD))
    first = next(iter(traces.Shards(sample_shards)))
    row = first.turns[0]
    code, out, err = trajbench(
        [
            "traces", "show", str(sample_shards), "--trajectory", row.trajectory_id, "--turn", str(row.turn),
            "--profiles", str(f), "--profile", "mine",
        ],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    body = json.loads(out)
    assert body["model"] == "org/Mine" and body["temperature"] == 0.6 and body["max_completion_tokens"] == 4096


def test_a_profile_file_round_trips_to_the_same_bytes_and_hash(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps(GOOD))
    (prof,) = traces.read_profile_file(a)
    y1 = traces.write_profile_file(tmp_path / "b.yaml", [prof])
    (back,) = traces.read_profile_file(y1)
    assert back == prof and back.content_hash() == prof.content_hash()
    y2 = traces.write_profile_file(tmp_path / "c.yaml", [back])
    assert y1.read_bytes() == y2.read_bytes()
    assert traces.get_profile("kimi-k3").content_hash() == traces.get_profile("kimi-k3").content_hash()


def test_publish_refuses_an_existing_folder_and_a_built_in_in_a_user_registry(
    tmp_path: Path, sample_shards: Path
) -> None:
    (tmp_path / "rel").mkdir()
    with pytest.raises(traces.TraceError, match="already exists; a release is never overwritten"):
        traces.publish(sample_shards, tmp_path / "rel", traces.get_profile("kimi-k3"))
    with pytest.raises(traces.TraceError, match="built in: its official hash lives in the package"):
        traces.publish(sample_shards, tmp_path / "new", traces.get_profile("kimi-k3"), registry=tmp_path / "reg.json")
    assert not (tmp_path / "new").exists() and not (tmp_path / "reg.json").exists()


def test_publish_refuses_shards_counted_for_another_model(tmp_path: Path, sample: Path) -> None:
    from traces.tokenizers import load_tokenizer

    shards = tmp_path / "qwen"
    traces.build_shards([str(sample)], shards, traces.BuildOptions(name="qwen"), counter=load_tokenizer("qwen3.6"))
    with pytest.raises(
        traces.TraceError, match=r"counted with qwen3\.6, profile kimi-k3 uses kimi; rebuild the shards"
    ):
        traces.publish(shards, tmp_path / "rel", traces.get_profile("kimi-k3"))
    assert not (tmp_path / "rel").exists()


def test_publish_is_deterministic_and_registers_a_user_profile(tmp_path: Path, sample_shards: Path) -> None:
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(GOOD))
    (prof,) = traces.read_profile_file(f)
    reg = tmp_path / "reg.json"
    one = traces.publish(sample_shards, tmp_path / "one", prof, registry=reg)
    two = traces.publish(sample_shards, tmp_path / "two", prof)
    assert one.files == two.files
    assert "README.md" in one.files and "registry.json" in one.files and "profile.yaml" in one.files
    for name in one.files:
        assert (one.folder / name).read_bytes() == (two.folder / name).read_bytes(), name
    assert traces.HashRegistry.read(reg).content_hashes == {"mine": traces.Shards(sample_shards).content_hash}
    assert traces.registered_hash(reg, "mine") == one.content_hash
    assert str(tmp_path) not in (one.folder / "README.md").read_text()  # no path of this machine


def test_publish_reads_the_registry_first_and_never_replaces_an_entry(tmp_path: Path, sample_shards: Path) -> None:
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(GOOD))
    (prof,) = traces.read_profile_file(f)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(traces.TraceError, match="not a registry file"):
        traces.publish(sample_shards, tmp_path / "r1", prof, registry=bad)
    assert not (tmp_path / "r1").exists()  # nothing left that would block the retry
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"version": 1, "description": "x", "content_hashes": {"mine": "0" * 64}}))
    with pytest.raises(traces.TraceError, match="already registered with dataset 0000000000000000"):
        traces.publish(sample_shards, tmp_path / "r2", prof, registry=other)
    assert not (tmp_path / "r2").exists()
    assert traces.HashRegistry.read(other).content_hashes == {"mine": "0" * 64}


def test_a_profile_sets_the_clients_waiting_times_outside_its_hash(tmp_path: Path) -> None:
    """The official profiles wait as the reference's official configuration does (a turn 14,400 s,
    a socket idle 0.5 s); a profile that does not say takes the reference's defaults; neither is
    part of what a run is judged by (the hash), since a run records the values it used."""
    for name in ("kimi-k3", "qwen3.6-35b-a3b"):
        official = traces.get_profile(name)
        assert (official.turn_timeout_s, official.max_idle_s) == (14_400.0, 0.5)
    old = traces.get_profile("kimi-k2.6")
    assert (old.turn_timeout_s, old.max_idle_s) == (86_400.0, 4.0)
    a = tmp_path / "a.yaml"
    a.write_text(json.dumps({"mine": {**GOOD["mine"], "turn_timeout_s": 900, "max_idle_s": 2}}))
    (mine,) = traces.read_profile_file(a)
    (plain,) = traces.read_profile_file(_json(tmp_path / "b.json", GOOD))
    assert (mine.turn_timeout_s, mine.max_idle_s, plain.turn_timeout_s) == (900.0, 2.0, 86_400.0)
    assert mine.content_hash() == plain.content_hash()
    # the kimi-k3 hash runs recorded before these fields existed (the hash of the judged fields)
    assert traces.get_profile("kimi-k3").content_hash().startswith(KIMI_K3_HASH)


KIMI_K3_HASH = "faae7ecde5b222a5"


def _json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("value", [0, -1, "soon", True])
def test_a_bad_waiting_time_is_named_with_the_rule(
    value: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _json(tmp_path / "bad.json", {"mine": {**GOOD["mine"], "turn_timeout_s": value}})
    code, _, err = trajbench(["profiles", "--profiles", str(bad)], capsys)
    assert code == 1 and "Traceback" not in err
    assert "profile 'mine': turn_timeout_s: must be seconds a turn may take, a number > 0" in err
