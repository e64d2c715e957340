"""Sizes counted in tokens (or characters), as options take them and tables print them: one
meaning everywhere, decimal, as people who count tokens expect ("a 128k context" is 128,000).

k = 1,000, M = 1,000,000, G = 1,000,000,000 (either case), so `120k` is 120,000 in
`traces stats --cache-sizes` and in the simulator's `--cache-tokens` alike. Byte sizes are not
parsed here: their options say their unit in the name (`--max-response-mb` is in MiB).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

#: Multipliers of the size suffixes (decimal).
SUFFIXES = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}

#: What a size looks like, for help texts and errors.
SIZE_HELP = "a whole number, or with k = 1,000, M = 1,000,000 (e.g. 65536, 120k, 1.5M)"


def parse_size(text: str) -> int:
    """`120k` → 120000, `1.5M` → 1500000, `65536` → 65536. Raises ValueError (with a message
    saying what a size looks like) for anything else: a negative, a fraction of a unit, a word."""
    t = text.strip().replace("_", "")
    mult = SUFFIXES.get(t[-1:].lower(), 1)
    number = t[:-1] if mult != 1 else t
    try:
        value = Decimal(number) * mult
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a size: {SIZE_HELP}") from None
    if not value.is_finite() or value != value.to_integral_value() or value < 0:
        raise ValueError(f"{text!r} is not a size: {SIZE_HELP}")
    return int(value)


def format_size(n: int) -> str:
    """The short form `parse_size` reads back exactly: `120k`, `1.5M`, else `131,072`."""
    for suffix, mult in (("G", 1_000_000_000), ("M", 1_000_000), ("k", 1_000)):
        if n >= mult and (n * 10) % mult == 0:  # at most one decimal
            return f"{Decimal(n) / mult:f}".removesuffix(".0") + suffix
    return f"{n:,}"
