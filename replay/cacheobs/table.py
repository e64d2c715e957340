"""The terminal form of a cache analysis: one rich table of causes and a line of totals."""

from __future__ import annotations

from rich import box
from rich.table import Table

from .model import CacheAnalysis
from .simunits import SIM_UNITS


def cause_table(a: CacheAnalysis) -> Table:
    t = Table(
        title=f"Cache deficit of {a.run}",
        caption=(
            f"{a.cached_tokens:,} of {a.ideal_tokens:,} ideal tokens cached ({a.hit_rate_of_ideal:.1%}) "
            f"over {a.turns:,} turns; block {a.block_size} ({a.block_size_source}); rules: docs/cache.md"
        ),
        box=box.SIMPLE_HEAD,
    )
    t.add_column("cause")
    t.add_column("turns", justify="right")
    t.add_column("deficit tokens", justify="right")
    t.add_column("share", justify="right")
    for c in a.causes:
        t.add_row(c.cause, f"{c.turns:,}", f"{c.deficit_tokens:,}", f"{c.share:.1%}")
    return t


def _fallback(a: CacheAnalysis) -> str:
    """The count rule's clause: on count-mismatch turns no template check covers (all of them
    without a check), a deficit no earlier cause explains is template_drift by the count alone."""
    if not a.count_fallback_turns:
        return ""
    if a.count_fallback_turns == a.count_mismatch_turns:
        return "; a deficit no earlier cause explains is template_drift there"
    return (
        f"; on the {a.count_fallback_turns:,} of them no template check covers, a deficit no earlier cause "
        "explains is template_drift"
    )


def warnings(a: CacheAnalysis) -> list[str]:
    """What makes the figures less than exact, or what they describe, one line each."""
    out = []
    if a.simulated:
        units = (
            "counted as the simulator counts them (about 4 characters per token, in its own prompt format), "
            "since it ran without --tokenizer, so its prompt and cached counts compare with the ideal"
            if a.tokenizer == SIM_UNITS
            else f"counted with {a.tokenizer}"
        )
        out.append(
            f"Note: {a.run} was measured against trajbench's simulator: the figures describe the simulator's LRU "
            f"prefix cache, not an engine's; tokens are {units} (docs/cache.md)"
        )
    if a.count_mismatch_turns:
        out.append(
            f"Warning: on {a.count_mismatch_turns:,} of {a.turns:,} turns the server's prompt tokens differ from the "
            f"run tokenizer's count ({a.tokenizer}) by more than a block: it renders or tokenises prompts otherwise, "
            "so those deficits are not exact" + _fallback(a) + " (docs/cache.md)"
        )
    if a.template_check is not None and not a.template_check_turns:
        out.append(
            f"Warning: the template check {a.template_check} covered none of the analysed turns (it sampled other "
            "instances or turns, or the run's turns are re-salted repeats beyond the stored ones); check more with `traces check-template --sample N` (docs/templates.md)"
        )
    if a.turns_without_cached:
        out.append(f"Note: {a.turns_without_cached:,} finished turns had no cached-token count from the server")
    return out
