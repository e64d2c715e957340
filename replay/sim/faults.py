"""Fault injection: which request fails, and how, decided by seed and request content only.

Kinds (each produces exactly that fault, for the replay engine's reliability tests):
  500           HTTP 500 with an OpenAI-style error JSON
  429           HTTP 429 with `Retry-After: 1`
  reset         the connection is closed abruptly before any response header
  midstream     about half of the answer's chunks are streamed, then the connection is closed
                without the terminating chunk or `[DONE]`
  error-object  HTTP 200 SSE: the role chunk, then `data: {"error": {...}}`, then `[DONE]`
  malformed     HTTP 200 SSE: the role chunk, then a `data:` line that is not JSON, then `[DONE]`
  stall         HTTP 200 SSE: the role chunk, then nothing until `--stall-seconds` pass or the
                client hangs up (for timeout tests)
The header `X-Sim-Fault: <kind>` forces a fault on one request (`none` forces none).
"""

from __future__ import annotations

import hashlib

from .config import FAULT_KINDS, SimConfig

FAULT_HEADER = "X-Sim-Fault"


class UnknownFault(ValueError):
    pass


def pick_fault(config: SimConfig, digest: bytes, forced: str | None) -> str | None:
    """The fault of a request with prompt digest `digest`, or None."""
    if forced:
        forced = forced.strip().lower()
        if forced == "none":
            return None
        if forced not in FAULT_KINDS:
            raise UnknownFault(f"{FAULT_HEADER}: unknown fault {forced!r}; use one of {', '.join(FAULT_KINDS)} or none")
        return forced
    if config.fail_rate <= 0:
        return None
    h = hashlib.blake2b(f"fault|{config.seed}|".encode() + digest, digest_size=16).digest()
    if int.from_bytes(h[:8], "big") / 2**64 >= config.fail_rate:
        return None
    return config.fail_kinds[int.from_bytes(h[8:], "big") % len(config.fail_kinds)]
