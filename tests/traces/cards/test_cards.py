"""Every data card in data_cards/ parses, has the fixed sections, and matches what it claims.

A card that names a content hash also records the commands that rebuild it; the test runs them
(inputs relative to the project root, outputs in a temporary folder) and compares the manifest.
Rebuilding the full-size synthetic set takes minutes, so cards whose recipe synthesises data are
marked slow.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from cardrecipes import CARDS_DIR, reads_shared, recipe_problems
from click.testing import CliRunner

import traces
from cli import cli
from traces.cards.card import REQUIRED_KEYS, SECTIONS, check_card, parse_card, write_card

ALL = sorted(CARDS_DIR.glob("*.md"))


def _is_format_doc(path: Path) -> bool:
    return parse_card(path).meta.get("kind") == "format"


DATA_CARDS = [p for p in ALL if not _is_format_doc(p)]


def test_the_cards_the_issue_asks_for_exist() -> None:
    names = {p.stem for p in DATA_CARDS}
    assert {"synthetic", "official-combined", "deepswe-coding", "workato-workflow"} <= names
    assert (CARDS_DIR / "workflow-format.md").is_file()


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_markdown_file_in_data_cards_has_yaml_front_matter(path: Path) -> None:
    card = parse_card(path)
    assert card.meta.get("name"), f"{path.name}: front matter needs a name"


@pytest.mark.parametrize("path", DATA_CARDS, ids=lambda p: p.name)
def test_data_card_has_keys_sections_and_images(path: Path) -> None:
    card = parse_card(path)
    assert check_card(card) == []
    meta = card.meta
    if meta["content_hash"] is None:  # a card of data we cannot build here: nothing to verify
        assert meta["shards"] == [], f"{path.name}: shards listed without a content hash"
    else:
        assert re.fullmatch(r"[0-9a-f]{64}", meta["content_hash"])
        assert meta.get("build"), f"{path.name}: a card with a content hash records the commands that rebuild it"
    assert meta["counts"]["trajectories"] > 0


def test_workato_card_links_the_format_definition() -> None:
    assert "workflow-format.md" in (CARDS_DIR / "workato-workflow.md").read_text(encoding="utf-8")


def _recipe_params() -> list[object]:
    """Cards with a content hash whose recipe builds from data the project has; the card of the
    official example (built from ../shared/fixtures) is checked by test_conformance.py."""
    params: list[object] = []
    for path in DATA_CARDS:
        meta = parse_card(path).meta
        if meta.get("content_hash") is None or reads_shared(meta["build"]):
            continue
        slow = any(" synth " in f" {c} " for c in meta["build"])
        params.append(pytest.param(path, id=path.name, marks=[pytest.mark.slow] if slow else []))
    return params


def test_only_the_official_example_card_is_built_from_shared_data() -> None:
    shared = [p.name for p in DATA_CARDS if reads_shared(parse_card(p).meta.get("build") or [])]
    assert shared == ["mlperf-coding-20.md"]


@pytest.mark.parametrize("path", _recipe_params())
def test_card_recipe_rebuilds_its_manifest(path: Path, tmp_path: Path) -> None:
    """TRAJBENCH_UPDATE_GOLDEN=1 rewrites the card from the rebuilt shards (same licence, version,
    summary and recipe): the way to refresh a card after the shards' contents change."""
    assert recipe_problems(path, tmp_path) == []


# ---------------------------------------------------------------- the writer and the checker
def test_written_card_checks_against_its_manifest_and_detects_drift(tmp_path: Path, sample: Path) -> None:
    shards = tmp_path / "demo"
    traces.build_shards([str(sample)], shards, traces.BuildOptions(name="demo"))
    out = write_card(
        shards,
        tmp_path / "cards" / "demo.md",
        license="Apache-2.0",
        build=["trajbench traces build x.jsonl --out demo"],
    )
    card = parse_card(out)
    assert card.sections == SECTIONS
    assert set(REQUIRED_KEYS) <= set(card.meta)
    manifest = traces.Manifest.read(shards)
    assert check_card(card, manifest) == []
    drifted = dataclasses.replace(
        manifest,
        content_hash="0" * 64,
        counts=dataclasses.replace(manifest.counts, client_turns=manifest.counts.client_turns + 1),
    )
    problems = check_card(card, drifted)
    assert any(p.startswith("content_hash") for p in problems) and any(p.startswith("counts") for p in problems)
    (tmp_path / "cards" / "img" / "demo-isl_growth.png").unlink()
    assert any("demo-isl_growth.png" in p for p in check_card(parse_card(out)))


def test_broken_cards_are_reported_with_their_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text("# no front matter\n", encoding="utf-8")
    with pytest.raises(traces.TraceError, match=r"bad\.md:1: a data card starts with YAML front matter"):
        parse_card(bad)
    bad.write_text("---\nname: x\n---\n\n## Summary\n\n## Fields\n", encoding="utf-8")
    problems = check_card(parse_card(bad))
    assert any("'license'" in p for p in problems) and any("sections must be" in p for p in problems)


def test_cli_card_writes_card_and_plots(tmp_path: Path, sample: Path) -> None:
    shards = tmp_path / "s"
    traces.build_shards([str(sample)], shards, traces.BuildOptions(name="s"))
    out = tmp_path / "cards" / "s.md"
    result = CliRunner().invoke(
        cli, ["traces", "card", str(shards), "--out", str(out), "--license", "Apache-2.0", "-c", "2"]
    )
    assert result.exit_code == 0, result.output
    assert check_card(parse_card(out)) == []
    assert sorted(p.name for p in (out.parent / "img").iterdir()) == [
        "s-isl_growth.png",
        "s-lru_hit_curve.png",
        "s-prefix_reuse.png",
    ]
