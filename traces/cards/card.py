"""Data cards: Markdown with YAML front matter that code writes from a manifest and tests check.

`write_card` renders a card for a built shard folder: the front matter is copied from the
manifest (name, version, sources, licence, counts, shards with sha256, tokenizer fingerprint,
generated_by, content hash, and the commands that rebuild it), the body has the fixed sections of
`SECTIONS`, and the statistics section embeds the tables and PNG plots of `traces stats`.
`parse_card` and `check_card` are what the tests (and a reviewer's script) use on every card.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..analysis import StatsOptions, compute_stats, write_plots
from ..contract import to_json
from ..errors import TraceError
from ..outdir import unwritable
from ..progress import Progress
from ..shards import Manifest, Shards
from .body import render_body

SECTIONS = ("Summary", "Sources and collection", "Fields", "Transformations", "Statistics", "Limitations")
REQUIRED_KEYS = (
    "name",
    "version",
    "license",
    "sources",
    "counts",
    "shards",
    "tokenizer",
    "generated_by",
    "content_hash",
)

_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)


@dataclass(frozen=True)
class Card:
    path: Path
    meta: dict[str, Any]
    sections: tuple[str, ...]
    body: str


def parse_card(path: str | Path) -> Card:
    """Front matter (YAML) and `## ` section titles of a card; raises TraceError if malformed."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    m = _FRONT.match(text)
    if m is None:
        raise TraceError(f"{p}:1: a data card starts with YAML front matter between two '---' lines")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise TraceError(f"{p}: front matter is not valid YAML ({exc})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"{p}: front matter must be a YAML mapping")
    body = text[m.end() :]
    sections = tuple(line[3:].strip() for line in body.splitlines() if line.startswith("## "))
    return Card(p, meta, sections, body)


def check_card(card: Card, manifest: Manifest | None = None) -> list[str]:
    """Problems of a card: missing keys or sections, missing images, and (given its manifest)
    every front-matter fact that disagrees with it. Empty when the card is good."""
    problems = [f"front matter lacks {k!r}" for k in REQUIRED_KEYS if k not in card.meta]
    found = [s for s in card.sections if s in SECTIONS]
    if found != list(SECTIONS):
        problems.append(f"sections must be {list(SECTIONS)} in this order, found {list(card.sections)}")
    for img in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", card.body):
        if not (card.path.parent / img).is_file():
            problems.append(f"image {img} does not exist next to the card")
    if manifest is not None:
        expected = _front_matter_from(manifest)
        for key in ("name", "content_hash", "counts", "tokenizer", "generated_by"):
            if card.meta.get(key) != expected[key]:
                problems.append(f"{key}: card says {card.meta.get(key)!r}, manifest says {expected[key]!r}")
        if [s.get("sha256") for s in card.meta.get("sources") or []] != [s["sha256"] for s in expected["sources"]]:
            problems.append("sources: sha256 differ from the manifest's")
    return problems


def _front_matter_from(manifest: Manifest) -> dict[str, Any]:
    """The card's facts about its data, taken from the manifest (what `check_card` compares)."""
    return {
        "name": manifest.name,
        "content_hash": manifest.content_hash,
        "counts": to_json(manifest.counts),
        "sources": [to_json(s) for s in manifest.sources],
        "shards": [{"file": s.file, "rows": s.rows, "sha256": s.sha256} for s in manifest.shards],
        "tokenizer": to_json(manifest.tokenizer),
        "generated_by": manifest.generated_by,
        "build_options": to_json(manifest.options),
    }


def write_card(
    shards_dir: str | Path,
    out: str | Path,
    *,
    version: str = "1",
    license: str = "unknown",
    summary: str | None = None,
    build: Sequence[str] = (),
    tokenizer: Any | None = None,
    options: StatsOptions | None = None,
    progress: Progress | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write the card of a built shard folder to `out` and its plots to `img/` beside it
    (`progress` follows the statistics, the long part). `extra` adds front-matter keys (a
    release's Hugging Face `configs:` and profile, `traces.publish`) after trajbench's own."""
    out_path = Path(out)
    if out_path.suffix != ".md":
        raise TraceError(f"{out_path}: a data card is a Markdown file; name it NAME.md")
    try:
        (out_path.parent / "img").mkdir(parents=True, exist_ok=True)  # fail before the statistics, not after
    except OSError as exc:
        raise unwritable(out_path, exc) from None
    sh = Shards(shards_dir)
    front = _front_matter_from(sh.manifest)
    meta: dict[str, Any] = {
        "name": front["name"],
        "version": version,
        "license": license,
        "generated_by": front["generated_by"],
        "content_hash": front["content_hash"],
        "counts": front["counts"],
        "sources": front["sources"],
        "shards": front["shards"],
        "tokenizer": front["tokenizer"],
        "build_options": front["build_options"],
    }
    if build:
        meta["build"] = list(build)
    for key, value in (extra or {}).items():
        if key in meta:
            raise TraceError(f"card front matter: {key!r} is trajbench's own key; the extra keys may not replace it")
        meta[key] = value
    stats = compute_stats(sh.path, tokenizer=tokenizer, options=options, progress=progress)
    meta["statistics"] = {
        "units": to_json(stats.units),
        "domains": {
            d: {"trajectories": v.trajectories, "client_turns": v.client_turns} for d, v in stats.domains.items()
        },
    }
    img_dir = out_path.parent / "img"
    images = [
        p.relative_to(out_path.parent).as_posix() for p in write_plots(stats, img_dir, prefix=f"{out_path.stem}-")
    ]
    text = "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=100) + "---\n\n"
    text += render_body(meta, stats, images, summary)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(text, encoding="utf-8")
    return out_path
