"""Service-level objectives of a run (`--slo ttft_ms=X,tpot_ms=Y`, `--session-slo SECONDS`),
parsed and checked before the run starts and recorded in run.json; `replay.results.goodput` judges the
turns and sessions by them (docs/metrics.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ReplayError

#: The keys `--slo` accepts, with the unit each is in.
SLO_KEYS = {"ttft_ms": "ms", "tpot_ms": "ms"}


@dataclass(frozen=True)
class Slo:
    """The service-level objectives of a run; None: no limit on that quantity."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    session_s: float | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.session_s))

    def turn_spec(self) -> str | None:
        """The `--slo` text that gives this SLO back (None: no per-turn limit)."""
        parts = [f"{k}={_num(v)}" for k, v in (("ttft_ms", self.ttft_ms), ("tpot_ms", self.tpot_ms)) if v is not None]
        return ",".join(parts) or None

    def describe(self) -> str:
        """The limits in words ("TTFT 2000 ms, session 600 s"; "none" without any)."""
        parts = [
            f"{name} {_num(v)} {unit}"
            for name, v, unit in (
                ("TTFT", self.ttft_ms, "ms"),
                ("TPOT", self.tpot_ms, "ms"),
                ("session", self.session_s, "s"),
            )
            if v is not None
        ]
        return ", ".join(parts) or "none"

    def check(self) -> None:
        for name, v in (
            ("--slo ttft_ms", self.ttft_ms),
            ("--slo tpot_ms", self.tpot_ms),
            ("--session-slo", self.session_s),
        ):
            if v is not None and not (v > 0):  # also refuses NaN
                raise ReplayError(f"{name} must be a number > 0, got {v}; leave it out for no limit")


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def parse_slo(text: str | None, session_s: float | None = None) -> Slo:
    """`ttft_ms=2000,tpot_ms=50` (either key optional; `inf` for no limit) and a session limit."""
    values: dict[str, float | None] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, raw = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in SLO_KEYS:
            raise ReplayError(
                f"--slo {text!r}: {part.strip()!r} is not KEY=VALUE with KEY one of {', '.join(SLO_KEYS)}; "
                "e.g. --slo ttft_ms=2000,tpot_ms=50 (docs/metrics.md)"
            )
        if key in values:
            raise ReplayError(f"--slo {text!r}: {key} is given twice; keep one")
        try:
            value = float(raw)
        except ValueError:
            raise ReplayError(f"--slo {text!r}: {key}={raw.strip()!r} is not a number of milliseconds") from None
        values[key] = None if math.isinf(value) and value > 0 else value
    if session_s is not None and math.isinf(session_s) and session_s > 0:
        session_s = None
    slo = Slo(values.get("ttft_ms"), values.get("tpot_ms"), session_s)
    slo.check()
    return slo
