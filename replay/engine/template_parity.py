"""`trajbench traces check-template`: does the engine tokenise a prompt as trajbench does?
(docs/templates.md)

trajbench counts input tokens, measures prefix reuse and explains cache misses with a client-side
render of each prompt (the shards' tokenizer and chat template). If the engine renders the same
messages differently (another template version, a stray space, a system prompt it adds), every
one of those numbers is off from that token on, and the engine's cache sees a prefix the client
does not. This module samples turns of a shard folder (deterministically, by a seed), renders
each full prompt both ways and compares the token ids: per turn the two counts, whether the ids
are identical and, where they are not, the first position where they part, with the text around
it on both sides.

It also checks the history marker where it matters, in the engine: for each sampled turn whose
replayed assistant message carries a marker, the engine tokenises the prompt once more with that
marker taken out; the marker works only if the two token lists differ (docs/history-marker.md).
A client-side check cannot settle this alone: an engine may rewrite a message before templating
(vLLM and SGLang parse tool-call arguments into objects, erasing whitespace in them).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

import traces
from traces.tokenizers import ChatTokenizer

from ..errors import ReplayError
from .served import choose_model
from .tokenize import EngineTokenizer, api_root, detect_api, served_models

#: Tokens of context shown before and after a divergence.
CONTEXT_TOKENS = 12


@dataclass(frozen=True)
class TurnParity:
    """One sampled turn, tokenised by the client and by the engine."""

    instance_id: str
    turn: int
    client_tokens: int
    engine_tokens: int
    identical: bool
    first_divergence: int | None  # the first token position where the ids differ (None: identical)
    text_before: str | None  # the tokens both sides share just before it, decoded
    client_after: str | None  # the client's tokens from it on, decoded
    engine_after: str | None  # the engine's tokens from it on, decoded (by the engine when it can)
    # the turn's history marker changes the engine's tokens (None: the turn carries no marker)
    marker_kept: bool | None = None


@dataclass(frozen=True)
class TemplateParity(traces.JsonFile):
    """The report `--json FILE` writes (canonical JSON, sorted keys)."""

    FILE = "template_parity.json"

    endpoint: str
    api: str
    model: str
    tokenizer: str
    profile: str
    dataset: str
    content_hash: str
    sample: int
    seed: int
    turns: list[TurnParity]
    identical: int
    parity: float  # share of the sampled turns whose ids are identical, 0..1
    markers_checked: int = 0  # sampled turns whose replayed assistant message carries a marker
    markers_erased: int = 0  # of those, the ones whose marker the engine's tokens do not show
    # how `model` was settled (replay.engine.served: "option", "profile" or "served"); None in a
    # report written before it was recorded
    model_source: str | None = None
    profile_model: str | None = None  # the profile's served name (said when another was used)

    def write_to(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically to `path` (a temporary file beside it, then a rename)."""
        out = Path(path)
        tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
        tmp.write_text(self.text(), encoding="utf-8")
        os.replace(tmp, out)
        return out


def sample_turns(shards: traces.Shards, n: int, seed: int) -> list[tuple[int, int]]:
    """`n` (instance ordinal, turn position) pairs, the same for the same shards and seed: distinct
    instances first, in a seeded order, one turn each picked by the same generator; when `n` is
    larger than the instances, further rounds take other turns of the same instances."""
    rng = random.Random(seed)
    order = list(range(len(shards)))
    rng.shuffle(order)
    picked: dict[int, list[int]] = {}
    lengths: dict[int, int] = {}
    total = 0
    while total < n:
        grew = False
        for k in order:
            if total >= n:
                break
            if k not in lengths:
                lengths[k] = len(shards.instance(k).turns)
            left = [t for t in range(lengths[k]) if t not in picked.get(k, [])]
            if not left:
                continue
            picked.setdefault(k, []).append(rng.choice(left))
            total += 1
            grew = True
        if not grew:  # every turn of every instance is in the sample
            break
    return sorted((k, t) for k, ts in picked.items() for t in ts)


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first position where two id lists differ (the shorter one's length when one is a
    prefix of the other); None when they are identical."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def compare_turn(
    instance_id: str,
    turn: int,
    client: list[int],
    engine: list[int],
    decode: Callable[[list[int]], str],
    engine_decode: Callable[[list[int]], str | None],
    marker_kept: bool | None = None,
) -> TurnParity:
    d = first_divergence(client, engine)
    if d is None:
        return TurnParity(instance_id, turn, len(client), len(engine), True, None, None, None, None, marker_kept)
    after = engine[d : d + CONTEXT_TOKENS]
    engine_text = engine_decode(after) if after else ""
    return TurnParity(
        instance_id,
        turn,
        len(client),
        len(engine),
        False,
        d,
        decode(client[max(0, d - CONTEXT_TOKENS) : d]),
        decode(client[d : d + CONTEXT_TOKENS]),
        engine_text if engine_text is not None else decode(after),
        marker_kept,
    )


def check_template(
    shards_dir: str,
    endpoint: str,
    tokenizer: ChatTokenizer,
    profile: traces.Profile,
    *,
    sample: int = 20,
    seed: int = 0,
    api: str = "auto",
    model: str | None = None,
    timeout: float = 60.0,
    client: httpx.Client | None = None,
) -> TemplateParity:
    """Compare the client's and the engine's tokenisation of `sample` turns of the shards."""
    shards = traces.Shards(shards_dir)
    own = client is None
    http = client if client is not None else httpx.Client(timeout=timeout)
    try:
        kind = detect_api(http, endpoint) if api == "auto" else api
        # the name the engine serves, found rather than guessed (vLLM answers 404 to any other)
        choice = choose_model(
            model, profile.served_model_name, served_models(http, endpoint), endpoint=api_root(endpoint)
        )
        engine = EngineTokenizer(http, endpoint, kind, choice.name)
        kwargs = dict(profile.chat_template_kwargs)
        rows: list[TurnParity] = []
        wanted = sample_turns(shards, sample, seed)
        by_instance: dict[int, set[int]] = {}
        for k, t in wanted:
            by_instance.setdefault(k, set()).add(t)
        for k, positions in sorted(by_instance.items()):
            for pos, prompt in enumerate(traces.iter_prompts(shards.instance(k))):
                if pos not in positions:
                    continue
                ids = tokenizer.encode(tokenizer.render(prompt.messages, prompt.tools))
                theirs = engine.tokenize(prompt.messages, prompt.tools, kwargs)
                unmarked = traces.without_marker(prompt)
                kept = None if unmarked is None else engine.tokenize(unmarked, prompt.tools, kwargs) != theirs
                rows.append(
                    compare_turn(
                        prompt.row.instance_id,
                        prompt.row.turn,
                        ids,
                        theirs,
                        tokenizer.decode,
                        engine.detokenize,
                        kept,
                    )
                )
    finally:
        if own:
            http.close()
    same = sum(r.identical for r in rows)
    return TemplateParity(
        endpoint=endpoint,
        api=kind,
        model=engine.model,
        tokenizer=tokenizer.name,
        profile=profile.name,
        dataset=shards.manifest.name,
        content_hash=shards.content_hash,
        sample=sample,
        seed=seed,
        turns=rows,
        identical=same,
        parity=same / len(rows) if rows else 1.0,
        markers_checked=sum(r.marker_kept is not None for r in rows),
        markers_erased=sum(r.marker_kept is False for r in rows),
        model_source=choice.source,
        profile_model=choice.profile_name,
    )


def _show(text: str | None, width: int = 60) -> str:
    shown = repr(text or "")[1:-1]
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def render_parity(report: TemplateParity) -> list[str]:
    """The terminal lines: one per turn, the text around each divergence, and the parity figure."""
    lines = [
        f"template parity: {report.dataset} ({report.content_hash[:16]}…) with {report.tokenizer} "
        f"against {report.endpoint} ({report.api}, model {report.model})",
    ]
    if report.model_source == "served":
        lines.append(
            f"model {report.model}: the endpoint's only model (the profile's {report.profile_model!r} is not served)"
        )
    lines.append(f"{'instance':<28} {'turn':>5} {'client':>8} {'engine':>8}  {'ids':<9} {'first diff':>10}  marker")
    for r in report.turns:
        marker = "-" if r.marker_kept is None else ("kept" if r.marker_kept else "ERASED")
        lines.append(
            f"{r.instance_id[:28]:<28} {r.turn:>5} {r.client_tokens:>8,} {r.engine_tokens:>8,}  "
            f"{'identical' if r.identical else 'differ':<9} {'-' if r.first_divergence is None else r.first_divergence:>10}"
            f"  {marker}"
        )
        if not r.identical:
            lines.append(f"    before: {_show(r.text_before)}")
            lines.append(f"    client: {_show(r.client_after)}")
            lines.append(f"    engine: {_show(r.engine_after)}")
    n = len(report.turns)
    lines.append(f"parity: {report.identical} of {n} sampled turns identical ({100 * report.parity:.1f} %)")
    if report.markers_checked:
        kept = report.markers_checked - report.markers_erased
        lines.append(
            f"history marker: the engine's tokens change with it in {kept} of {report.markers_checked} sampled "
            "replayed assistant messages"
            + ("" if not report.markers_erased else " (an erased marker does not stop reuse of generated tokens)")
        )
    else:
        lines.append("history marker: none in the sampled turns (built with --no-history-marker, or first turns only)")
    return lines


def default_template_tokenizer(shards: traces.Shards, profile: traces.Profile) -> str:
    """The client-side tokenizer when none is named: the one the shards were counted with, else the
    profile's, if it loads without a local path; otherwise the error says what to pass."""
    from traces.tokenizers import TOKENIZERS

    counted = shards.manifest.tokenizer.name if shards.manifest.tokenizer is not None else None
    for spec in (counted, profile.tokenizer):
        if spec is not None and ":" not in spec and spec in TOKENIZERS and TOKENIZERS[spec].path is None:
            return spec
    raise ReplayError(
        f"{shards.path}: the shards were counted with {counted or 'no tokenizer'} and profile {profile.name} uses "
        f"{profile.tokenizer}, which needs a local path; pass --tokenizer NAME:PATH (e.g. hf:DIR for the model "
        "folder, gguf:FILE for the file a llama.cpp server loads; `trajbench tokenizers` lists the kinds)"
    )
