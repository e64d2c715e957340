"""traces.analysis: lengths, growth, ideal prefix reuse, the radix LRU cache and `traces stats`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from reuse_oracle import ideal_within_reuse

import traces
from cli import cli
from traces import to_json
from traces.analysis import Stats, StatsOptions, analyse, compute_stats, default_cache_sizes
from traces.analysis.cache import RadixLRU, closed_loop_order
from traces.analysis.lengths import summarize
from traces.analysis.reuse import block_hashes

SYSTEM = "You are the support agent of ACME. " * 20


def _stats(shards: Path, **kw: Any) -> dict[str, Any]:
    """The statistics as stats.json holds them."""
    return to_json(compute_stats(shards, **kw))  # type: ignore[no-any-return]


def _rows(cid: str, system: str | None, turns: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """A user/assistant conversation: (user text, answer text) per exchange."""
    rows: list[dict[str, Any]] = []
    for user, answer in turns:
        row: dict[str, Any] = {"conversation_id": cid, "turn": len(rows) + 1, "role": "user", "content": user}
        if system and not rows:
            row["system"] = system
        rows.append(row)
        rows.append({"conversation_id": cid, "turn": len(rows) + 1, "role": "assistant", "content": answer})
    return rows


def _build(tmp_path: Path, rows: list[dict[str, Any]], name: str = "ds", **opts: Any) -> Path:
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / name
    traces.build_shards([str(src)], out, traces.BuildOptions(name=name, **opts))
    return out


# ---------------------------------------------------------------- exact within-trajectory reuse
def test_exact_within_reuse_counts_segments(tmp_path: Path) -> None:
    # turn 1 sends [system, u1]; turn 3 sends [system, u1, a1, u3] and may reuse the first two
    shards = _build(tmp_path, _rows("t1", SYSTEM, [("u1", "a1"), ("u3", "a3")]))
    r = ideal_within_reuse(shards, lambda _text: 1)
    assert (r.reused, r.total) == (2, 6)
    assert r.fraction == pytest.approx(1 / 3)


TOOL_A = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
TOOL_B = [{"type": "function", "function": {"name": "refund", "parameters": {"type": "object", "properties": {}}}}]


def test_a_changed_tool_list_restarts_the_prefix_after_the_system_message(tmp_path: Path) -> None:
    rows = _rows("t1", SYSTEM, [("u1", "a1"), ("u3", "a3")])
    rows[0]["tools"], rows[2]["tools"] = TOOL_A, TOOL_B
    shards = _build(tmp_path, rows)
    # turn 1 sends [system, tools A, u1]; turn 3 [system, tools B, u1, a1, u3]: only the system is shared
    r = ideal_within_reuse(shards, lambda _text: 1)
    assert (r.reused, r.total) == (1, 8)
    stats = _stats(shards, options=StatsOptions(block_size=8))
    exact = ideal_within_reuse(shards)
    assert stats["reuse_exact_within"]["fraction"] == pytest.approx(exact.fraction, abs=1e-6)
    rows[2]["tools"] = TOOL_A
    same = _stats(_build(tmp_path, rows, "same"), options=StatsOptions(block_size=8))
    # blocks may run past the system message into the common start of the two tool lists, but
    # never as far as with an unchanged tool list
    assert exact.fraction * 0.9 < stats["reuse"]["mlperf"]["all"]["within"] < same["reuse"]["mlperf"]["all"]["within"]


def test_stats_exact_within_equals_the_library_function(sample_shards: Path) -> None:
    stats = _stats(sample_shards)
    r = ideal_within_reuse(sample_shards)
    assert (stats["reuse_exact_within"]["reused"], stats["reuse_exact_within"]["total"]) == (r.reused, r.total)
    strong = ideal_within_reuse(sample_shards, salt_mode="strong")
    assert strong.total > r.total  # 64-bit salts are longer than 16-bit ones


def test_block_hashes_identify_prefixes() -> None:
    a = np.arange(1000, dtype=np.uint32)
    b = a.copy()
    b[500] = 7  # differs inside block 7 (of 64)
    ha, hb = block_hashes(a, 64), block_hashes(b, 64)
    assert len(ha) == 15 and ha.dtype == np.uint64
    assert (ha[:7] == hb[:7]).all() and not (ha[7:] == hb[7:]).any()
    assert (block_hashes(a[:640], 64) == ha[:10]).all()  # a prefix's hashes are a prefix
    assert len(set(ha.tolist())) == 15
    assert len(block_hashes(a[:63], 64)) == 0


def test_exact_within_reuse_of_coding_trajectories_matches_the_repeated_characters(
    tmp_path: Path, coding_set: Path
) -> None:
    out = tmp_path / "coding"
    traces.build_shards([str(coding_set)], out, traces.BuildOptions(name="coding"))
    r = ideal_within_reuse(out)
    # each request's prompt repeats the previous request's prompt and appends to it: the ideal
    # reuse is the share of prompt characters already sent by the turn before
    repeated = total = 0
    for inst in traces.Shards(out):
        chars = [t.prompt_chars for t in inst.turns]
        repeated += sum(chars[:-1])
        total += sum(chars)
    assert r.fraction == pytest.approx(repeated / total, abs=0.002)
    stats = _stats(out, options=StatsOptions(salt_modes=("mlperf",), cache_sizes=(1 << 20,)))
    blocks = stats["reuse"]["mlperf"]["all"]["within"]
    assert r.fraction - 0.01 <= blocks <= r.fraction  # whole blocks only ever lose the partial last block


# ---------------------------------------------------------------- the radix LRU cache
def _chain(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def test_radix_cache_matches_prefixes_and_branches() -> None:
    a = _chain(*range(1, 11))
    cache = RadixLRU(None)
    assert cache.access(a, 5) == 0
    assert cache.access(a, 10) == 5  # the trajectory grew: its first five blocks are cached
    assert cache.access(a, 10) == 10
    b = _chain(1, 2, 3, 99, 98, 97)
    assert cache.access(b, 6) == 3  # shares three blocks, then branches
    assert cache.access(b, 6) == 6
    assert cache.access(a, 10) == 10  # the split kept both branches whole
    assert cache.size == 13


def test_radix_cache_evicts_least_recent_leaf_tail_first() -> None:
    a = _chain(*range(1, 11))
    c = _chain(*range(101, 111))
    cache = RadixLRU(15)
    cache.access(a, 10)
    cache.access(c, 10)  # over capacity by 5: a is older, loses its last five blocks
    assert cache.size == 15
    assert cache.access(a, 10) == 5  # a is a prefix again, and now the most recent
    assert cache.access(c, 10) == 5  # c lost its tail to make room
    small = RadixLRU(10)
    small.access(a, 10)
    small.access(c, 10)
    assert small.access(a, 10) == 0


def test_closed_loop_order_round_robin_over_slots() -> None:
    order = list(closed_loop_order([2, 1, 3], 2))
    assert order == [(0, 0), (1, 0), (0, 1), (2, 0), (2, 1), (2, 2)]
    assert list(closed_loop_order([2, 2], 1)) == [(0, 0), (0, 1), (1, 0), (1, 1)]


# ---------------------------------------------------------------- salt modes and cross reuse
def test_salting_blocks_cross_trajectory_reuse_of_the_shared_system_prompt(tmp_path: Path) -> None:
    rows = _rows("sim_001", SYSTEM, [("hello", "hi")]) + _rows("sim_002", SYSTEM, [("help", "sure")])
    shards = _build(tmp_path, rows, "wf")
    stats = _stats(shards, options=StatsOptions(block_size=16, concurrency=1))
    reuse = stats["reuse"]
    # no salt: the whole system prompt is shared; mlperf: only up to the conversation salt
    assert reuse["none"]["all"]["cross"] > reuse["mlperf"]["all"]["cross"] > 0
    assert reuse["none"]["all"]["within"] == 0  # one turn per trajectory: nothing to reuse within
    assert set(reuse["none"]) == {"all", "workflow"}


def test_a_dataset_without_system_prompt_reports_salting_as_unavailable(tmp_path: Path) -> None:
    shards = _build(tmp_path, _rows("t1", None, [("u1", "a1"), ("u3", "a3")]), salt="none")
    stats = _stats(shards)
    assert "cannot be salted" in stats["reuse"]["mlperf"]["error"]
    assert stats["reuse"]["none"]["all"]["within"] >= 0
    assert stats["lru"]["salt"] == "none"


# ---------------------------------------------------------------- the statistics
def test_summarize_takes_observed_percentiles() -> None:
    s = summarize([1, 2, 3, 4, 100])
    assert to_json(s) == {"n": 5, "mean": 22, "p50": 3, "p90": 4, "p99": 4, "max": 100}
    assert summarize([]).mean is None


def test_default_cache_sizes_end_at_holding_everything() -> None:
    sizes = default_cache_sizes(3000, 64)
    assert sizes[-1] == 4096 and sizes == sorted(sizes) and sizes[0] >= 64
    assert len(default_cache_sizes(10**7, 64)) == 10


def test_sample_stats_counts_growth_and_lru(sample_shards: Path) -> None:
    stats = _stats(sample_shards, options=StatsOptions(concurrency=2))
    assert stats["units"] == {"lengths": "chars", "reuse": "chars"}
    d = stats["domains"]
    assert (d["all"]["trajectories"], d["all"]["client_turns"]) == (4, 17)
    assert d["coding"]["client_turns"] + d["workflow"]["client_turns"] == 17
    growth = stats["growth"]["coding"]
    assert [g["turn_index"] for g in growth] == list(range(len(growth)))
    assert growth[-1]["p50"] > growth[0]["p50"]  # context grows
    lru = stats["lru"]
    hits = [p["hit_fraction"] for p in lru["points"]]
    assert hits == sorted(hits)
    assert hits[-1] == lru["unlimited"] == pytest.approx(stats["reuse"]["mlperf"]["all"]["ideal"], abs=1e-6)


def test_stats_and_plots_are_deterministic(sample_shards: Path, tmp_path: Path) -> None:
    first = analyse(sample_shards, tmp_path / "a")
    second = analyse(sample_shards, tmp_path / "b")
    names = sorted(p.name for p in first.files)
    assert names == sorted(p.name for p in second.files)
    assert names == ["isl_growth.png", "lru_hit_curve.png", "prefix_reuse.png", "stats.json"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert Stats.read(tmp_path / "a") == first.stats  # stats.json reads back as what was computed
    assert (tmp_path / "a" / "isl_growth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class WordTokenizer:
    """A tokenizer with the build/stats interface: one token per whitespace-separated word."""

    name = "words"
    fingerprint = "words-v1"

    def encode(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]

    def output_tokens(self, message: dict[str, Any], **_: Any) -> int:
        return len(self.encode(message.get("content") or ""))

    def start(self, tools: Any) -> Any:
        tok = self

        class Count:
            n = 0

            def add(self, messages: list[dict[str, Any]]) -> int:
                added = sum(len(tok.encode(m.get("content") or "")) for m in messages)
                self.n += added
                return added

            def isl(self) -> int:
                return self.n

        return Count()


def test_a_given_tokenizer_switches_every_length_to_tokens(tmp_path: Path) -> None:
    shards = _build(tmp_path, _rows("t1", SYSTEM, [("one two three", "four five"), ("six", "seven")]))
    stats = _stats(shards, tokenizer=WordTokenizer(), options=StatsOptions(block_size=4))
    assert stats["units"] == {"lengths": "tokens", "reuse": "tokens"}
    words_system = len(("[salt: x] " + SYSTEM + " [salt: y]").split())
    isl = stats["domains"]["all"]["isl"]
    assert isl["n"] == 2 and isl["max"] == words_system + 3 + 2 + 1
    assert stats["domains"]["all"]["expected_osl"]["max"] == 2


def test_counting_with_a_tokenizer_equals_the_build_token_columns(tmp_path: Path, sample: Path) -> None:
    from traces.tokenizers import load_tokenizer

    tok = load_tokenizer("qwen3.6")
    plain, counted = tmp_path / "plain", tmp_path / "counted"
    traces.build_shards([str(sample)], plain, traces.BuildOptions(name="s"))
    traces.build_shards([str(sample)], counted, traces.BuildOptions(name="s"), counter=tok)
    opts = StatsOptions(salt_modes=("mlperf",))
    a = _stats(plain, tokenizer=tok, options=opts)
    b = _stats(counted, options=opts)  # token columns, and the tokenizer reloaded by name
    assert a["units"] == b["units"] == {"lengths": "tokens", "reuse": "tokens"}
    for key in ("isl", "delta", "expected_osl"):
        assert a["domains"]["all"][key] == b["domains"]["all"][key], key
    assert a["reuse"] == b["reuse"]


def test_cli_stats_prints_tables_and_writes_files(sample_shards: Path, tmp_path: Path) -> None:
    out = tmp_path / "stats"
    result = CliRunner().invoke(
        cli, ["traces", "stats", str(sample_shards), "--out", str(out), "-c", "4", "--cache-sizes", "1k,4k"]
    )
    assert result.exit_code == 0, result.output
    assert "Ideal prefix reuse" in result.output and "LRU prefix cache" in result.output
    stats = json.loads((out / "stats.json").read_text())
    assert [p["capacity"] for p in stats["lru"]["points"]] == [1000, 4000]  # k = 1,000, as everywhere
    bad = CliRunner().invoke(cli, ["traces", "stats", str(sample_shards), "--cache-sizes", "lots"])
    assert bad.exit_code != 0 and "not a size" in bad.output
