"""What the simulator answers: seeded synthetic answers, or the recorded answer (oracle).

An `Answer` is a list of pieces, one per decode step: reasoning pieces, content pieces, and per
tool call one step for its name then its argument pieces. `plan` caps it at the request's
`max_completion_tokens` and says what was actually emitted. Both sources depend only on
(seed, request content), never on arrival order, so a run is reproducible at any concurrency.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from traces import Shards, TraceError, canonical_json, iter_prompts, messages_sha256, salt_for

from .config import SimConfig
from .errors import SimError
from .tokens import SimTokenizer, Tokens

REASONING, CONTENT, TOOL_NAME, TOOL_ARGS = range(4)

_WORDS = (
    "the simulated model considers request cache token prefix block replica step batch "
    "latency stream answer tool call output file test check value result next then run "
    "look read edit fix update path line function class module error expected actual "
    "should would could this that with from into over under before after because so"
).split()


class OracleMiss(SimError):
    """The oracle has no recorded answer for a prompt."""


@dataclass(frozen=True)
class ToolCallPlan:
    id: str
    name: str
    arg_pieces: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    reasoning: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    tool_calls: tuple[ToolCallPlan, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The decode steps of one response and the assistant message they add up to.

    Step i streams `texts[i]` as a delta of kind `kinds[i]` = (REASONING|CONTENT|TOOL_NAME|
    TOOL_ARGS, tool-call index); `kinds` is None when every step is content (the common case,
    kept free of per-token tuples).
    """

    texts: tuple[str, ...]
    kinds: tuple[tuple[int, int], ...] | None
    finish_reason: str
    reasoning: str
    content: str
    tool_calls: tuple[dict[str, Any], ...]

    @property
    def n_steps(self) -> int:
        return len(self.texts)

    def steps(self) -> list[tuple[int, int, str]]:
        if self.kinds is None:
            return [(CONTENT, 0, t) for t in self.texts]
        return [(k, i, t) for (k, i), t in zip(self.kinds, self.texts, strict=True)]


def plan(answer: Answer, max_tokens: int | None) -> Plan:
    natural = "tool_calls" if answer.tool_calls else "stop"
    if not answer.tool_calls and not answer.reasoning and answer.content:
        texts = answer.content
        if max_tokens is not None and len(texts) > max_tokens:
            texts, natural = texts[:max_tokens], "length"
        return Plan(texts, None, natural, "", "".join(texts), ())
    steps: list[tuple[int, int, str]] = [(REASONING, 0, p) for p in answer.reasoning]
    steps += [(CONTENT, 0, p) for p in answer.content]
    for i, call in enumerate(answer.tool_calls):
        steps.append((TOOL_NAME, i, call.name))
        steps += [(TOOL_ARGS, i, p) for p in call.arg_pieces]
    if not steps:
        steps = [(CONTENT, 0, "")]  # an immediate end-of-sequence still costs one decode step
    if max_tokens is not None and len(steps) > max_tokens:
        steps, finish = steps[:max_tokens], "length"
    else:
        finish = natural
    reasoning = "".join(t for k, _, t in steps if k == REASONING)
    content = "".join(t for k, _, t in steps if k == CONTENT)
    calls: list[dict[str, Any]] = []
    for k, i, t in steps:
        if k == TOOL_NAME:
            calls.append({"id": answer.tool_calls[i].id, "type": "function", "function": {"name": t, "arguments": ""}})
        elif k == TOOL_ARGS:
            calls[i]["function"]["arguments"] += t
    return Plan(
        tuple(t for _, _, t in steps), tuple((k, i) for k, i, _ in steps), finish, reasoning, content, tuple(calls)
    )


def _rng(seed: int, tokens: Tokens) -> random.Random:
    h = hashlib.blake2b(str(seed).encode() + b"|" + tokens.digest, digest_size=8).digest()
    return random.Random(int.from_bytes(h, "big"))


class SyntheticAnswers:
    """Seeded answers of lognormal length (mean `osl_mean`, coefficient of variation `osl_cv`).

    Each piece is exactly one token by construction (4 characters, like the approximation), so
    the length drawn is the completion token count. With tools: reasoning deltas, then one call
    of a tool from the request with JSON arguments filling its first string parameter.
    """

    def __init__(self, config: SimConfig) -> None:
        self.seed = config.seed
        self.mean = config.osl_mean
        self.sigma = math.sqrt(math.log1p(config.osl_cv**2))
        self.mu = math.log(config.osl_mean) - self.sigma**2 / 2
        self.fraction = config.reasoning_fraction
        rng = random.Random(config.seed)
        self._filler = " ".join(rng.choice(_WORDS) for _ in range(20_000))
        self._filler_pieces = self._pieces(self._filler)  # answers are slices of this: no per-token work

    def _length(self, rng: random.Random) -> int:
        if self.sigma == 0:
            return max(1, round(self.mean))
        return max(1, round(rng.lognormvariate(self.mu, self.sigma)))

    def _text(self, rng: random.Random, chars: int) -> str:
        chars = max(0, min(chars, len(self._filler) - 1))
        start = rng.randrange(0, len(self._filler) - chars)
        start = self._filler.rfind(" ", 0, start) + 1  # begin at a word
        return self._filler[start : start + chars]

    @staticmethod
    def _pieces(text: str) -> tuple[str, ...]:
        return tuple(text[i : i + 4] for i in range(0, len(text), 4))

    def answer(self, tokens: Tokens, tools: Sequence[dict[str, Any]] | None) -> Answer:
        rng = _rng(self.seed, tokens)
        n = self._length(rng)
        if not tools:
            n = min(n, len(self._filler_pieces))
            start = rng.randrange(0, len(self._filler_pieces) - n + 1)
            return Answer(content=self._filler_pieces[start : start + n])
        n_reason = int(n * self.fraction)
        tool = rng.choice(list(tools)).get("function", {})
        props = (tool.get("parameters") or {}).get("properties") or {}
        required = (tool.get("parameters") or {}).get("required") or list(props)
        key = next((p for p in required if (props.get(p) or {}).get("type", "string") == "string"), "input")
        shell = json.dumps({key: ""})
        n_args = max(1, n - n_reason - 1)
        value = self._text(rng, max(1, 4 * n_args - len(shell)))
        arguments = json.dumps({key: value})
        call_id = "call_" + hashlib.blake2b(b"call" + tokens.digest, digest_size=12).hexdigest()
        return Answer(
            reasoning=self._pieces(self._text(rng, 4 * n_reason)),
            tool_calls=(ToolCallPlan(call_id, tool.get("name", "tool"), self._pieces(arguments)),),
        )


class OracleAnswers:
    """The recorded answer of each turn, found by the request's prompt hash (a perfect model).

    Prompts are rebuilt for repeats 1..`oracle_repeats` (replay derives later repeats by
    re-salting) and both with and without the history marker, so either replay setting hits.
    """

    def __init__(self, config: SimConfig, tokenizer: SimTokenizer) -> None:
        self.tokenizer = tokenizer
        self.path = config.shards
        try:
            shards = Shards(config.shards or "")
        except TraceError as exc:
            raise SimError(f"--answers oracle: {exc}") from None
        self.table: dict[str, str | None] = {}
        seen: set[str] = set()
        for inst in shards:
            if inst.trajectory_id in seen:
                continue
            seen.add(inst.trajectory_id)
            for repeat in range(1, config.oracle_repeats + 1):
                salt = salt_for(shards, inst.trajectory_id, repeat)
                for marker in (True, False):
                    for prompt in iter_prompts(inst, salt=salt, markers=marker):
                        self.table[prompt.sha256] = prompt.row.expected_json
        shards.close()

    def answer(self, messages: list[dict[str, Any]]) -> Answer:
        sha = messages_sha256(messages)
        if sha not in self.table:
            raise OracleMiss(
                f"prompt {sha[:16]}… is not in the shards at {self.path} (oracle mode answers only the "
                "recorded turns, repeats 1..--oracle-repeats, with or without the history marker); "
                "replay these shards, or use --answers synthetic"
            )
        raw = self.table[sha]
        if raw is None:  # the trajectory ends on this client turn: nothing was recorded
            return Answer()
        row = json.loads(raw)
        pieces = self.tokenizer.pieces
        calls = []
        for call in row.get("tool_calls") or ():
            fn = call.get("function", {})
            args = fn.get("arguments", "")
            args = args if isinstance(args, str) else canonical_json(args)
            calls.append(ToolCallPlan(call.get("id", ""), fn.get("name", ""), tuple(pieces(args))))
        return Answer(
            reasoning=tuple(pieces(row.get("reasoning_content") or "")),
            content=tuple(pieces(row.get("content") or "")),
            tool_calls=tuple(calls),
        )
