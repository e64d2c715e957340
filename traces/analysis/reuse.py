"""Prompts as a cache sees them: unit streams cut into chained-hash blocks, per salt mode.

A prompt is viewed as a *stream of units* (a tokenizer's tokens, or characters as the documented
fallback) made of segments in this order: the system message, the tool list, then every other
message. Each segment is encoded on its own, which is what chat templates do in effect (special
tokens separate messages) and keeps the work linear: a trajectory's prompts only ever append
segments, so each segment is encoded once per instance, and the salt modes, whose prompts differ
only in the system message, share every other segment's encoding.

Paged KV caches reuse prefixes in fixed-size blocks, so the stream is cut into blocks of
`block_size` units and each full block gets a hash of the whole prefix up to it (a polynomial
over per-block hashes, computed with numpy in one pass): equal hashes mean equal prefixes, so the
longest cached prefix is found by comparing block hashes, never unit by unit. The last partial
block of a prompt is never reused.

`ideal_within_reuse` is the simple, exact message-level figure (no blocks) that the simulator's
measured cached-token fraction is compared against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..canonical import canonical_json
from ..errors import TraceError
from ..requests import make_salt
from ..shards import Instance, Shards, iter_prompts

#: Encodes one segment's text into units; `len` of the result is its unit count.
Encoder = Callable[[str], Sequence[int] | str]


def segment_text(message: dict[str, Any]) -> str:
    """The text of one chat message as a stream segment: role, then every field a chat template
    renders (tool calls as canonical JSON), one per line."""
    parts = [message["role"]]
    for key in ("name", "tool_call_id", "reasoning_content", "content"):
        value = message.get(key)
        if value:
            parts.append(value if isinstance(value, str) else canonical_json(value))
    if message.get("tool_calls"):
        parts.append(canonical_json(message["tool_calls"]))
    return "\n".join(parts)


def system_segment(system: str) -> str:
    return segment_text({"role": "system", "content": system})


# ------------------------------------------------------------------ the salt-free plan
@dataclass(frozen=True)
class PromptPlan:
    """One instance's prompts apart from the system message: per turn, the segments it appends
    (`restart` when the prompt is not an extension of the previous one, because the tool list
    changed; the segments are then the whole prompt after the system message)."""

    trajectory_id: str
    repeat: int
    domain: str
    system: str | None  # unsalted
    stored_system: str | None  # as salted by the build
    steps: tuple[tuple[bool, tuple[str, ...]], ...]


def prompt_plan(sh: Shards, inst: Instance, on_prompt: Callable[[Any], None] | None = None) -> PromptPlan:
    """Rebuild the instance's prompts once (`iter_prompts`, the build's salt) and keep the new
    segments of each; `on_prompt` sees every `TurnPrompt` on the way (for length counting)."""
    steps: list[tuple[bool, tuple[str, ...]]] = []
    n_msgs = -1
    tools: Any = None
    stored: str | None = None
    for p in iter_prompts(inst):
        if on_prompt is not None:
            on_prompt(p)
        msgs = p.messages
        skip = 1 if msgs and msgs[0]["role"] == "system" else 0
        if skip:
            stored = msgs[0]["content"]
        # `iter_prompts` appends to one list and reuses the message objects, so only the tail
        # beyond the previous prompt is rendered, and a changed tool list is a restart
        if n_msgs < 0 or (p.tools is not tools and p.tools != tools):
            new = ([canonical_json(p.tools)] if p.tools else []) + [segment_text(m) for m in msgs[skip:]]
            steps.append((n_msgs >= 0, tuple(new)))
            tools = p.tools
        else:
            steps.append((False, tuple(segment_text(m) for m in msgs[n_msgs:])))
        n_msgs = len(msgs)
    first = inst.turns[0]
    return PromptPlan(inst.trajectory_id, inst.repeat, first.domain, first.system, stored, tuple(steps))


def salted_system(plan: PromptPlan, mode: str, seed: int) -> str | None:
    """The system message text of `plan` under salt `mode` (docs/salting.md)."""
    if not plan.system:
        if mode != "none":
            raise TraceError(
                f"conversation {plan.trajectory_id}: has no system prompt, so it cannot be salted (docs/salting.md); "
                "prefix reuse under this salt mode is not defined for this dataset"
            )
        return None
    return make_salt(mode, plan.trajectory_id, plan.repeat, seed).apply(plan.system)


def plan_within(plan: PromptPlan, counts: Sequence[Sequence[int]], system_units: int) -> tuple[int, int]:
    """(reused, total) units of one instance: each turn reuses the leading segments it shares
    with the previous prompt (all of it, unless the tool list changed)."""
    reused = total = 0
    segs: list[str] = []
    cnts: list[int] = []
    size = 0  # units of the previous prompt that this one shares
    for k, ((restart, new), c) in enumerate(zip(plan.steps, counts, strict=True)):
        new_c = list(c)
        if k == 0:
            size = system_units  # nothing was sent before; the system message starts the prompt
        elif restart:
            same = 0
            while same < min(len(segs), len(new)) and segs[same] == new[same]:
                same += 1
            segs, cnts = segs[:same], cnts[:same]
            size = system_units + sum(cnts)
            new, new_c = new[same:], new_c[same:]
            reused += size
        else:
            reused += size
        segs.extend(new)
        cnts.extend(new_c)
        size += sum(new_c)
        total += size
    return reused, total


# ------------------------------------------------------------------ exact message-level reuse
@dataclass(frozen=True)
class Reuse:
    """Units of input that an unlimited cache could serve (`reused`) out of all sent (`total`)."""

    reused: int
    total: int

    @property
    def fraction(self) -> float:
        return self.reused / self.total if self.total else 0.0


# ------------------------------------------------------------------ block streams
@dataclass(frozen=True)
class TurnStream:
    """One turn's prompt as the cache sees it: the first `blocks` hashes of chain `chain` of its
    instance, and its length in units (`units` ≥ blocks × block size)."""

    chain: int
    blocks: int
    units: int


@dataclass(frozen=True)
class InstanceStream:
    """Block-hash chains of one instance (one chain unless its tool list changed mid-way)."""

    domain: str
    chains: tuple[np.ndarray, ...]
    turns: tuple[TurnStream, ...]


def encode_units(encode: Encoder, text: str) -> np.ndarray:
    """A segment's units as uint32 (characters as code points)."""
    out = encode(text)
    if isinstance(out, str):
        return np.frombuffer(out.encode("utf-32-le"), dtype=np.uint32)
    return np.asarray(out, dtype=np.uint32)


_P = 0x9E3779B97F4A7C15  # odd, so invertible modulo 2**64
_P_INV = pow(_P, -1, 1 << 64)
MAX_BLOCK_SIZE = 1 << 16
_WEIGHTS = np.random.default_rng(20261129).integers(1, 1 << 63, size=MAX_BLOCK_SIZE, dtype=np.uint64) | np.uint64(1)


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser, elementwise (uint64 arithmetic wraps modulo 2**64)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _powers(base: int, n: int) -> np.ndarray:
    p = np.full(n, base, dtype=np.uint64)
    p[0] = 1
    return np.cumprod(p, dtype=np.uint64)


def block_hashes(units: np.ndarray, block_size: int) -> np.ndarray:
    """Hash of the whole prefix up to each full block: H_k = Σ_{j≤k} h_j·P^(k−j) mod 2⁶⁴ over
    mixed per-block hashes h_j, then mixed again. Deterministic, vectorised, O(n)."""
    n = len(units) // block_size
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    blocks = units[: n * block_size].reshape(n, block_size).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = _mix((blocks * _WEIGHTS[:block_size]).sum(axis=1, dtype=np.uint64))
        g = np.cumsum(h * _powers(_P_INV, n), dtype=np.uint64)
        return _mix(g * _powers(_P, n))


def instance_streams(
    plan: PromptPlan, encoded: Sequence[Sequence[np.ndarray]], block_size: int, systems: dict[str, np.ndarray | None]
) -> dict[str, InstanceStream]:
    """The block streams of one instance for each salt mode in `systems` (mode → encoded system
    segment), from the segments' encodings `encoded` (per step, per segment)."""
    out: dict[str, InstanceStream] = {}
    for mode, sys_units in systems.items():
        head = [sys_units] if sys_units is not None else []
        base = len(sys_units) if sys_units is not None else 0
        chains: list[np.ndarray] = []
        turns: list[TurnStream] = []
        parts = list(head)
        units = base
        for (restart, _), arrays in zip(plan.steps, encoded, strict=True):
            if restart:
                chains.append(block_hashes(np.concatenate(parts), block_size))
                parts, units = list(head), base
            parts.extend(arrays)
            units += sum(len(a) for a in arrays)
            turns.append(TurnStream(len(chains), units // block_size, units))
        chains.append(block_hashes(np.concatenate(parts) if parts else np.empty(0, np.uint32), block_size))
        out[mode] = InstanceStream(plan.domain, tuple(chains), tuple(turns))
    return out
