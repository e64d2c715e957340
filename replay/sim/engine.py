"""One simulated engine replica: a step loop with continuous batching and chunked prefill.

Every step has a token budget. First each running request decodes one token (one budget token
each), then the rest of the budget prefills waiting requests in arrival order, in chunks; a
request whose prefill completes samples its first token in that same step (as vLLM does). A step
lasts a + b·(prefilled tokens) + c·(sequences in the step), and its tokens become visible when it
ends, so TTFT, ITL and throughput respond to load like a real server: a long cold prompt stalls
everyone's decode for a few steps, a large batch slows each user down.

Steps are laid on a virtual timeline (the next step starts when the previous one was due to end,
not when the event loop got round to it), so timing does not drift under load. With zero
modelled latency the loop runs steps back to back and yields to the event loop about every
millisecond, so handlers write many steps' events in one socket write.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from .cache import PrefixCache
from .config import SimConfig
from .games import text_cache


class SimRequest:
    """The engine's view of one request; the HTTP handler waits on `event` for new tokens."""

    __slots__ = (
        "at_least",
        "blocks",
        "cached_tokens",
        "cancelled",
        "done",
        "event",
        "n_out",
        "prefill_left",
        "produced",
        "prompt_tokens",
    )

    def __init__(self, prompt_tokens: int, blocks: tuple[int, ...], n_out: int, at_least: int = 0) -> None:
        self.prompt_tokens = prompt_tokens
        self.blocks = blocks
        self.n_out = n_out
        self.at_least = at_least  # cached tokens a gaming mode claims beside the cache's own match (games.py)
        self.cached_tokens = 0
        self.prefill_left = -1  # -1 until admitted (the cache is consulted at admission)
        self.produced = 0
        self.done = False
        self.cancelled = False
        self.event = asyncio.Event()


class Replica:
    def __init__(self, index: int, config: SimConfig) -> None:
        self.index = index
        self.config = config
        self.cache = PrefixCache(config.block_size, config.cache_tokens)
        self.game_cache = text_cache(config.game)  # a cache game's second cache (games.py), else None
        self.waiting: deque[SimRequest] = deque()
        self.prefilling: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._cancelled = 0  # cancellations not yet swept out of `running`
        # Prometheus counters (cumulative) of this replica.
        self.requests_total = 0
        self.requests_finished = 0
        self.prompt_tokens_total = 0
        self.cached_tokens_total = 0
        self.computed_tokens_total = 0
        self.generation_tokens_total = 0
        self.steps_total = 0
        self.busy_seconds_total = 0.0
        self.cache_resets_total = 0

    @property
    def num_running(self) -> int:
        return len(self.running) + len(self.prefilling)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def load(self) -> int:
        return self.num_running + self.num_waiting

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"sim-replica-{self.index}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def reset_cache(self) -> None:
        """Empty the prefix cache (and a cache game's second one), as vLLM's reset does."""
        self.cache.clear()
        if self.game_cache is not None:
            self.game_cache.clear()
        self.cache_resets_total += 1

    def submit(self, prompt_tokens: int, blocks: tuple[int, ...], n_out: int, at_least: int = 0) -> SimRequest:
        req = SimRequest(prompt_tokens, blocks, max(1, n_out), at_least)
        self.requests_total += 1
        self.waiting.append(req)
        self._wake.set()
        return req

    def cancel(self, req: SimRequest) -> None:
        """Drop a request whose client went away; the loop discards it at its next step."""
        if not req.cancelled and not req.done:
            req.cancelled = True
            self._cancelled += 1

    def _admit(self, req: SimRequest) -> None:
        matched = self.cache.match(req.blocks, req.prompt_tokens)
        req.cached_tokens = max(matched, min(req.at_least, req.prompt_tokens - 1))
        req.prefill_left = req.prompt_tokens - req.cached_tokens
        self.prompt_tokens_total += req.prompt_tokens
        self.cached_tokens_total += req.cached_tokens
        self.computed_tokens_total += req.prefill_left

    def _step(self) -> tuple[float, list[SimRequest]]:
        """Plan one step: returns its duration (s) and the requests that got a token."""
        cfg = self.config
        budget = cfg.token_budget
        touched: list[SimRequest] = []
        if self._cancelled:
            self._cancelled = 0
            self.running = [r for r in self.running if not r.cancelled]
        for r in self.running[:budget]:
            r.produced += 1
            touched.append(r)
        budget -= len(touched)
        n_seqs = len(touched)
        prefill = 0
        while budget > 0:
            if not self.prefilling:
                if not self.waiting or self.num_running >= cfg.max_num_seqs:
                    break
                req = self.waiting.popleft()
                if req.cancelled:
                    continue
                self._admit(req)
                self.prefilling.append(req)
            req = self.prefilling[0]
            if req.cancelled:
                self.prefilling.popleft()
                continue
            chunk = min(budget, req.prefill_left)
            req.prefill_left -= chunk
            budget -= chunk
            prefill += chunk
            n_seqs += 1
            if req.prefill_left == 0:
                self.prefilling.popleft()
                self.cache.insert(req.blocks)
                req.produced = 1
                touched.append(req)
                self.running.append(req)
            else:
                break  # budget exhausted mid-prompt: the rest is prefilled next step
        duration = (cfg.step_base_ms + cfg.prefill_ms_per_token * prefill + cfg.batch_ms_per_seq * n_seqs) / 1000.0
        return duration, touched

    def _publish(self, touched: list[SimRequest]) -> None:
        finished = False
        for r in touched:
            if r.produced >= r.n_out:
                r.done = True
                finished = True
            r.event.set()
        self.generation_tokens_total += len(touched)
        if finished:
            done = [r for r in self.running if r.done]
            self.requests_finished += len(done)
            self.running = [r for r in self.running if not r.done]

    async def _loop(self) -> None:
        clock = time.monotonic
        next_at = clock()
        yield_at = next_at
        while True:
            if not (self.waiting or self.prefilling or self.running):
                self._wake.clear()
                await self._wake.wait()
                next_at = yield_at = clock()
                continue
            duration, touched = self._step()
            self.steps_total += 1
            if duration > 0:
                self.busy_seconds_total += duration
                next_at = max(next_at + duration, clock() - 0.05)  # catch up at most 50 ms when late
                delay = next_at - clock()
                await asyncio.sleep(delay if delay > 0 else 0)
                self._publish(touched)
            else:
                self._publish(touched)
                now = clock()
                if now >= yield_at or not touched:
                    await asyncio.sleep(0)
                    yield_at = clock() + 0.001
