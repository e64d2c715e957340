"""The maintainer's path of docs/maintainers.md, run as a maintainer runs it: `trajbench` commands
on the synthetic set, with the embedded simulator's oracle answers standing in for the reference
model. validate → build with the model's tokenizer (a user profile) → reference runs → derive the
gates → publish → check a submission against the published dataset, and one whose shards differ.

The synthetic set's recorded delays add up to minutes, so the runs skip them (`--no-delays`) and
`profiles derive` is told so (`--allow-unofficial`); that it refuses such runs otherwise is
tested here too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import in_process as trajbench

import traces

PROFILE = """\
my-model:
  description: My model (thresholds to be derived)
  served_model_name: org/My-Model
  tokenizer: qwen3.6
  sampling: {temperature: 0.7, top_p: 0.9}
  max_new_tokens: 8192
  chat_template_kwargs: {preserve_thinking: true}
  thresholds: {inline: null, osl_min: null, osl_max: null, swebench: null}
  swebench_template: default
"""


def ok(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = trajbench(argv, capsys)
    assert code == 0, err
    assert "Traceback" not in err
    return out


#: all 18 trajectories at once, against a simulator that takes no time per step
FAST = ["--concurrency", "18", "--sim-args", "--step-base-ms 0 --prefill-ms-per-token 0 --batch-ms-per-seq 0"]


def replay(
    shards: Path, out: Path, profiles: Path, profile: str, capsys: pytest.CaptureFixture[str], *more: str
) -> Path:
    ok(
        [
            "replay", "run", str(shards), "--profiles", str(profiles), "--profile", profile, "--no-delays",
            "--out", str(out), "--progress", "none", *FAST, *more,
        ],
        capsys,
    )  # fmt: skip
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)  # eval check runs the audits too: each replays the cache analysis of its run
def test_the_maintainers_path_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = tmp_path / "traces.jsonl"
    ok(["traces", "synth", "--out", str(raw), "--seed", "0", "--scale", "0.03"], capsys)
    assert ok(["traces", "validate", str(raw)], capsys).startswith("ok: 18 trajectories")
    base = tmp_path / "my-model.yaml"
    base.write_text(PROFILE)

    # listed beside the built-ins, with where it came from
    listed = json.loads(ok(["profiles", "--profiles", str(base), "--json"], capsys))
    assert listed["my-model"]["source"] == str(base) and listed["kimi-k3"]["source"] == "built-in"

    # build with the model's tokenizer and chat-template kwargs: the profile's
    shards = tmp_path / "shards"
    ok(["traces", "build", str(raw), "--out", str(shards), "--profiles", str(base), "--profile", "my-model"], capsys)
    manifest = traces.Shards(shards).manifest
    assert manifest.tokenizer is not None and manifest.tokenizer.name == "qwen3.6"

    # reference runs: one in-process, one with spawned workers (the user profile travels with the plan)
    ref1 = replay(shards, tmp_path / "runs" / "ref1", base, "my-model", capsys)
    ref2 = replay(shards, tmp_path / "runs" / "ref2", base, "my-model", capsys, "--workers", "2")
    info = json.loads((ref1 / "run.json").read_text())
    assert info["profile"] == "my-model" and info["profile_built_in"] is False
    assert info["profile_content"]["sampling"] == {"temperature": 0.7, "top_p": 0.9}
    assert info["profile_hash"] == traces.read_profile_file(base)[0].content_hash()
    assert info["request_params"]["temperature"] == 0.7

    # eval reads the profile run.json recorded, even without the file loaded
    code, out, _ = trajbench(["eval", "inline", str(ref1), "--gates", "off"], capsys)
    assert code == 0 and "1.0000" in out

    # derive: refused while the runs skipped delays, unless told
    derived_file = tmp_path / "my-model-v1.yaml"
    derive = ["profiles", "derive", str(ref1), str(ref2), "--name", "my-model-v1", "--out", str(derived_file)]
    code, _, err = trajbench([*derive, "--profiles", str(base)], capsys)
    assert code == 1 and "not official-shaped reference runs" in err and "--no-delays" in err
    assert "--allow-unofficial" in err and not derived_file.exists()
    ok([*derive, "--profiles", str(base), "--allow-unofficial"], capsys)
    (derived,) = traces.read_profile_file(derived_file)
    ref_mean = derived.derivation["reference"]["osl_mean"]  # type: ignore[index]
    assert derived.thresholds.osl_min == pytest.approx(0.9 * ref_mean, abs=0.01)
    assert derived.thresholds.osl_max == pytest.approx(1.1 * ref_mean, abs=0.01)
    assert derived.thresholds.inline == 0.99  # 0.99 x the oracle's perfect score
    assert derived.thresholds.swebench is None  # no SWE-bench reference runs given
    assert derived.sampling == {"temperature": 0.7, "top_p": 0.9} and derived.served_model_name == "org/My-Model"
    assert derived.derivation is not None and derived.derivation["rule"] == "docs/maintainers.md"
    assert derived.derivation["official_shaped"] is False

    # publish: a release folder that datasets opens, with a card whose front matter parses
    release = tmp_path / "release" / "my-model-v1"
    registry = tmp_path / "registry.json"
    out = ok(
        [
            "traces", "publish", str(shards), "--profiles", str(derived_file), "--profile", "my-model-v1",
            "--out", str(release), "--registry", str(registry), "--progress", "none",
        ],
        capsys,
    )  # fmt: skip
    assert f"content hash {manifest.content_hash}" in out
    assert json.loads(registry.read_text())["content_hashes"] == {"my-model-v1": manifest.content_hash}
    assert not [p for p in release.parent.iterdir() if p.name.startswith(".")]  # the temporary folder is gone
    card = traces.parse_card(release / "README.md")
    assert traces.check_card(card, traces.Shards(release).manifest) == []
    assert card.meta["configs"][0]["data_files"][0]["path"] == [s.file for s in manifest.shards]
    assert card.meta["profile"]["name"] == "my-model-v1"
    (published,) = traces.read_profile_file(release / "profile.yaml")
    assert published == derived

    import datasets

    ds = datasets.load_dataset(str(release), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == manifest.counts.client_turns

    # a submission on the published dataset: the dataset and the derived gates pass; a user
    # profile and the simulator are never official
    sub = replay(release, tmp_path / "runs" / "sub", derived_file, "my-model-v1", capsys)
    code, out, _ = trajbench(
        ["eval", "check", str(sub), "--profiles", str(derived_file), "--registry", str(registry), "--json"], capsys
    )
    checks = {c["check"]: c for c in json.loads(out)["checks"] if c["point"] == str(sub)}
    assert code == 1
    assert checks["dataset"]["passed"], checks["dataset"]
    assert checks["inline"]["passed"] and checks["osl"]["passed"] and checks["sampling"]["passed"]
    assert not checks["official-profile"]["passed"]
    assert (
        "user profile" in checks["official-profile"]["reason"]
        and "not an official result" in checks["official-profile"]["reason"]
    )

    # the registry is found through TRAJBENCH_REGISTRY too
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(traces.REGISTRY_ENV, str(registry))
        code, out, _ = trajbench(["eval", "check", str(sub), "--profiles", str(derived_file), "--json"], capsys)
        assert {c["check"]: c["passed"] for c in json.loads(out)["checks"]}["dataset"] is True

    # a run whose shards differ from the published ones fails the dataset check
    other = tmp_path / "other"
    ok(
        [
            "traces",
            "build",
            str(raw),
            "--out",
            str(other),
            "--no-history-marker",
            "--profiles",
            str(base),
            "--profile",
            "my-model",
        ],
        capsys,
    )
    bad = replay(other, tmp_path / "runs" / "bad", derived_file, "my-model-v1", capsys)
    code, out, _ = trajbench(
        ["eval", "check", str(bad), "--profiles", str(derived_file), "--registry", str(registry), "--json"], capsys
    )
    dataset = {c["check"]: c for c in json.loads(out)["checks"]}["dataset"]
    assert code == 1 and not dataset["passed"]
    assert f"is not the expected {manifest.content_hash[:16]}…" in dataset["reason"]
