"""The Markdown body of a generated data card: the fixed sections, filled from manifest and stats."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..analysis import ReuseFailed, Stats, fmt_number
from ..shards import COLUMNS

FIELD_DOCS: dict[str, str] = {
    "instance_id": "logical id of the trajectory instance (`<source>` or `<source>__repeat_<k>`, docs/terms.md); the `X-Session-ID`",
    "trajectory_id": "source `conversation_id`",
    "repeat": "pass over the dataset, 1-based",
    "turn": "the dataset's `turn` number of this client row (docs/terms.md)",
    "client_turn_index": "0-based index of the client turn within its trajectory",
    "num_client_turns": "client turns of the trajectory",
    "domain": "`workflow` for ids `sim_NNN`, else `coding`",
    "salt_repeat": "salt R (docs/salting.md; empty when salting is off)",
    "salt_conversation": "salt C (docs/salting.md; empty when salting is off)",
    "system": "unsalted system prompt, on the first turn of an instance only",
    "tools_json": "tool list (JSON in the dataset's own key order), only where it changes",
    "delta_json": "the turn's new flat rows (history since the previous client turn, then this row), JSON in the dataset's key order",
    "marker_field": "where the history marker goes in this turn's replayed assistant row (`reasoning_content`, `content` or `arguments`; null: none or marker off)",
    "marker_at": "the character position of that marker",
    "delay_seconds": "recorded wait before this turn, waited out by replay (docs/closed-loop.md)",
    "prompt_sha256": "sha256 of the canonical JSON of the full request messages",
    "prompt_chars": "characters of that canonical JSON",
    "expected_json": "the recorded assistant row answering this turn (ground truth), flat form",
    "intent_codes": "upper-cased intent codes of that answer (workflow ground truth)",
    "isl_tokens": "input tokens with the chat template (null unless built with `--tokenizer`)",
    "delta_tokens": "tokens this turn adds to the prompt (null unless built with `--tokenizer`)",
    "expected_osl_tokens": "tokens of the recorded answer, counted as the reference counts output (null unless built with `--tokenizer`)",
}


_LABELS = {
    "turns_per_trajectory": "turns per trajectory",
    "isl": "ISL",
    "delta": "delta (new input per turn)",
    "expected_osl": "expected OSL",
    "delay_seconds": "delay before a turn (s)",
}


def stats_markdown(stats: Stats, images: Sequence[str]) -> str:
    """Tables of lengths, delays, ideal reuse and the LRU curve, then the plots."""
    unit = stats.units.lengths
    out = [
        f"Lengths are in **{unit}**"
        + (" (no tokenizer was given: characters of the canonical request JSON)." if unit == "chars" else ".")
    ]
    out += ["", "| domain | metric | n | mean | p50 | p90 | p99 | max |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for dom, d in stats.domains.items():
        out.append(
            f"| {dom} | trajectories / instances / client turns | {fmt_number(d.trajectories)} / {fmt_number(d.instances)} / {fmt_number(d.client_turns)} | | | | | |"
        )
        for key, s in d.samples().items():
            out.append(f"| {dom} | {_LABELS[key]} | {' | '.join(map(fmt_number, s.row()))} |")
        out.append(f"| {dom} | total recorded delay (s) | | {fmt_number(d.delay_seconds.total)} | | | | |")
    out += [
        "",
        f"Ideal prefix reuse (unlimited cache, blocks of {stats.options.block_size} {stats.units.reuse}, "
        f"{stats.options.concurrency} users in closed loop): the fraction of input a cache could serve.",
        "",
        "| salt | domain | within trajectory | cross trajectory | ideal |",
        "|---|---|---:|---:|---:|",
    ]
    for mode, by_dom in stats.reuse.items():
        if isinstance(by_dom, ReuseFailed):
            out.append(f"| {mode} | – | n/a | n/a | {by_dom.error} |")
            continue
        for dom, r in by_dom.items():
            out.append(f"| {mode} | {dom} | {r.within:.2%} | {r.cross:.2%} | {r.ideal:.2%} |")
    ex = stats.reuse_exact_within
    out += ["", f"Exact message-level within-trajectory reuse: {ex.fraction:.2%} of {ex.unit}."]
    lru = stats.lru
    if lru:
        out += [
            "",
            f"LRU prefix cache with {lru.concurrency} users (salt {lru.salt}): hit fraction of input by cache size.",
            "",
            f"| cache size ({stats.units.reuse}) | hit fraction |",
            "|---:|---:|",
        ]
        out += [f"| {fmt_number(p.capacity)} | {p.hit_fraction:.2%} |" for p in lru.points]
        out.append(f"| unlimited | {lru.unlimited:.2%} |")
    out.append("")
    out += [f"![{img.rsplit('/', 1)[-1]}]({img})" for img in images]
    return "\n".join(out)


def field_table() -> str:
    """The Markdown table of shard columns, in schema order."""
    lines = ["| column | meaning |", "|---|---|"]
    lines += [f"| `{c}` | {FIELD_DOCS.get(c, '')} |" for c in COLUMNS]
    return "\n".join(lines)


def render_body(meta: dict[str, Any], stats: Stats, images: Sequence[str], summary: str | None) -> str:
    c = meta["counts"]
    opts = meta["build_options"]
    mix = ", ".join(f"{v.trajectories} {d}" for d, v in stats.domains.items() if d != "all")
    sources = "\n".join(f"- `{s['file']}` (sha256 `{s['sha256']}`)" for s in meta["sources"])
    rebuild = "\n".join(meta.get("build") or ["trajbench traces build <sources> --out <folder>"])
    marker = (
        "on (one space inside every replayed assistant message, docs/history-marker.md)"
        if opts["history_marker"]
        else "off (byte-identical reference prompts)"
    )
    tok = meta["tokenizer"]
    parts = [
        "## Summary",
        "",
        summary
        or f"`{meta['name']}`: {c['trajectories']} trajectories ({mix}), {c['instances']} instances, "
        f"{c['client_turns']} client turns, built by {meta['generated_by']}.",
        "",
        "## Sources and collection",
        "",
        f"Built from (format `{opts['format']}`):",
        "",
        sources,
        "",
        "Rebuild it with:",
        "",
        "```bash",
        rebuild,
        "```",
        "",
        f"The content hash `{meta['content_hash']}` identifies the rows on any machine; the shard sha256s "
        "identify these files (they can differ with another pyarrow version).",
        "",
        "## Fields",
        "",
        "One Parquet row per client turn (docs/files.md):",
        "",
        field_table(),
        "",
        "## Transformations",
        "",
        f"- Salt: `{opts['salt']}`"
        + (f" (seed {opts['seed']})" if opts["salt"] == "strong" else "")
        + " — docs/salting.md: `[salt: R]\\n\\n<system>\\n\\n[salt: C]` on every turn's system message.",
        f"- History marker: {marker}.",
        "- Delays: `delay_seconds` kept as recorded; replay waits them out before each turn (docs/closed-loop.md).",
        f"- Repeats materialised: {opts['repeats']}.",
        f"- Tokenizer: {'`' + tok['name'] + '` (fingerprint `' + tok['fingerprint'] + '`)' if tok else 'none (token columns are null)'}.",
        "",
        "## Statistics",
        "",
        stats_markdown(stats, images),
        "",
        "## Limitations",
        "",
        "- Statistics describe the recording; a live model's answers only change timing, never prompts (docs/requests.md).",
        "- Prefix reuse is measured on each message rendered on its own (role, text, tool calls), a close "
        "stand-in for the chat template; the LRU curve replays users round-robin, an approximation of closed loop.",
        "",
    ]
    return "\n".join(parts)
