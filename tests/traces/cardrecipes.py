"""Rebuilding a data card from its recipe (the card's `build` commands) and checking the card
against the rebuilt manifest: for test_cards.py (the cards of data the project makes) and
test_conformance.py (the card of the official example, whose recipe names the example's file:
the tests find it in the workspace's shared fixtures, outside the repository).

TRAJBENCH_UPDATE_GOLDEN=1 rewrites the card from the rebuilt shards (same licence, version,
summary and recipe): the way to refresh a card after the shards' contents change.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import traces
from cli import cli
from traces.cards.card import check_card, parse_card, write_card

ROOT = Path(__file__).resolve().parents[2]
CARDS_DIR = ROOT / "data_cards"
#: Where the official example's file lives beside a checkout in the workspace (not shipped).
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
OFFICIAL_EXAMPLE = "mlperf_coding_20.jsonl"


def reads_shared(commands: list[str]) -> bool:
    """Whether a recipe reads the official example, which is not in the repository."""
    return any(arg == OFFICIAL_EXAMPLE for line in commands for arg in shlex.split(line))


def rebuild(commands: list[str], tmp_path: Path) -> Path:
    """Run a card's recipe: inputs resolve against the project root, every --out goes to tmp_path."""
    mapped: dict[str, str] = {}
    built: Path | None = None
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "trajbench", line
        args = argv[1:3]  # the command group and command, e.g. traces build
        for k, arg in enumerate(argv[3:], start=3):
            if argv[k - 1] == "--out":
                mapped[arg] = str(tmp_path / Path(arg).name)
                args.append(mapped[arg])
            elif arg in mapped:
                args.append(mapped[arg])
            elif not arg.startswith("-") and (ROOT / arg).exists():
                args.append(str(ROOT / arg))
            elif arg == OFFICIAL_EXAMPLE:
                if not (SHARED_FIXTURES / arg).is_file():
                    pytest.skip(f"the official example {arg} is not here (a clone outside the workspace)")
                args.append(str(SHARED_FIXTURES / arg))
            elif "/" in arg and not arg.startswith("-"):
                pytest.skip(f"input {arg} is not here (a clone outside the workspace)")
            else:
                args.append(arg)
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        if argv[1:3] == ["traces", "build"]:
            built = Path(mapped[argv[argv.index("--out") + 1]])
    assert built is not None, "the recipe never runs `trajbench traces build`"
    return built


def recipe_problems(path: Path, tmp_path: Path) -> list[str]:
    """Rebuild the card's shards from its recipe; what the card gets wrong about them."""
    card = parse_card(path)
    built = rebuild(card.meta["build"], tmp_path)
    manifest = traces.Manifest.read(built)
    if os.environ.get("TRAJBENCH_UPDATE_GOLDEN"):
        rewrite(path, card, built, manifest)
        card = parse_card(path)
    return check_card(card, manifest)


def rewrite(path: Path, card: Any, built: Path, manifest: traces.Manifest) -> None:
    from traces.analysis import StatsOptions
    from traces.tokenizers import load_tokenizer

    text = path.read_text(encoding="utf-8")
    summary = text.split("## Summary\n\n", 1)[1].split("\n\n## ", 1)[0].strip()
    tok = manifest.tokenizer
    tokenizer = load_tokenizer(tok.name) if tok and card.meta["statistics"]["units"]["lengths"] == "tokens" else None
    users = re.search(r"blocks of (\d+) \w+, (\d+) users in closed loop", text)
    assert users, f"{path.name}: the card does not say its block size and users"
    options = StatsOptions(block_size=int(users.group(1)), concurrency=int(users.group(2)))
    write_card(
        built,
        path,
        version=str(card.meta["version"]),
        license=card.meta["license"],
        summary=summary,
        build=card.meta["build"],
        tokenizer=tokenizer,
        options=options,
    )
