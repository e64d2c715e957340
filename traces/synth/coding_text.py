"""What the synthetic coding agent writes: the THOUGHT before each bash call, and the wrap-up.

A THOUGHT reacts to the previous tool output (grep hits, code, a traceback, a test report),
reasons at a drawn length (`text.Lengths`: hypotheses about the bug, edge cases, a plan,
sometimes a quoted code excerpt) and ends saying what the next command does, as the recorded
mini-swe-agent runs do. The bash commands themselves come from `coding.Repo`.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from .text import Lengths, Slots, compose, sentences

if TYPE_CHECKING:
    from .coding import Repo

#: The agent's THOUGHT, in parts (docs/accuracy.md counts reasoning + tool-call arguments as the answer):
#: a reaction to the last tool output, analysis to the drawn length, then what the command does.
SEEN = {
    None: (
        "Let me start by exploring the repository structure to understand where `{fn}` lives.",
        "The PR description says that the error message for an invalid {a} only shows the index of the value at fault, not its name.",
        "I need to find the code that builds this error message first, then reproduce the problem, fix it and run the tests.",
    ),
    "explore": (
        "The search finds {n} matches; the interesting ones are in `{f}` and `{f2}`.",
        "So `{fn}` is defined in `{f}` and used from a handful of places, mostly tests.",
        "Only `{f}` defines `{fn}`; the other hits are callers in `{f2}` and the tests in `{t}`.",
        "Good, the grep output shows that `{fn}` is called with `{a}` and `{b}` in every place.",
    ),
    "read": (
        "This is the body of `{fn}`. It takes `{a}` and `{b}` and returns the result of `{fn2}`.",
        "Looking at this code, the `{a}` value is checked but its name is never included in the message.",
        "So `{fn}` delegates to `{fn2}` when `{a}` is not None and otherwise falls back to the default `{b}`.",
        "I see the pattern now: every check in this block returns a list of errors built with `{fn2}`.",
        "The relevant part is around line {line}, where the message is formatted with `%s` placeholders.",
    ),
    "script": (
        "The script is in place; running it should show the current message.",
        "The reproduction script is written. It imports `{fn}` directly, so it does not need the test settings.",
    ),
    "reproduce": (
        "The traceback confirms the bug: the message mentions `{a}[0]` but not the name of the {b}.",
        "The reproduction fails exactly as described in the PR: {err}",
        "Running the script gives return code 1 and the error comes from `{fn}` in `{f}`.",
    ),
    "edit": (
        "The edit went through without errors, but sed prints nothing, so I should verify the file.",
        "The change is applied. Let me double-check that the indentation is still consistent.",
        "The replacement worked; `{fn}` now passes `{a}` to `{fn2}`.",
        "No output from the edit, which is expected. The new message should now include the name.",
    ),
    "test": (
        "One test fails: `test_{fn}` expects `{a}` but gets `{b}`, so the message format is still off.",
        "The test run shows a failure in `{t}`; the assertion compares the old message.",
    ),
    "test_ok": (
        "All {n} tests pass, including the ones that check the exact message text.",
        "The tests pass now. I should still check an edge case before submitting.",
        "Good, the whole module passes, so the change does not break the other checks.",
    ),
}
ANALYSIS = (
    "The error message is built in `{fn}` with a format string that only receives the label and the index.",
    "If I change the signature of `{fn}`, every caller has to pass `{a}` as well, so it is better to compute it inside.",
    "There are two code paths here: one for `{a}` objects and one for plain strings; both need the field name.",
    "Wait, `{fn2}` already receives `{a}`, so I could reuse it instead of adding a new argument.",
    "Actually, the cleaner fix is to follow the pattern used by `{fn2}`, which formats the message as \"The value of '%s' refers to '%s', which is not ...\".",
    "Hmm, this might break `{t}` because the tests compare the exact message text.",
    "I should keep the change minimal: the PR only asks for the name in the message, not for a new check.",
    "The `{a}` variable holds the label like `{b}[0]`, while the actual name is in `{c}`.",
    "Let me think about edge cases: `{a}` could be a callable, a string naming a method, or an attribute of the model.",
    "If `{a}` is not a string, e.g. a lambda, `repr()` is not helpful and `__name__` reads better.",
    "I also need to check whether other checks in `{f}` have the same problem, so the behaviour stays consistent.",
    "`{fn}` is a private helper of {pkg}, so changing its message format is not an API change.",
    "The tests in `{t}` also assert on the error id, so the id must not change, only the text.",
    "Since the module already imports `{fn2}`, no new import is needed.",
    "It looks like `{fn2}` is only used for `{a}` values, which explains why the {b} case was missed.",
    "The {n} callers all pass keyword arguments, so adding `{a}=None` at the end of the signature is safe.",
    "There is a subtle point: `{a}` is normalised by `{fn2}` before the check, so the name must be taken before that.",
    "Maybe the problem is in `{fn2}` rather than `{fn}`; the traceback goes through both.",
    "The docstring of `{fn}` says it returns the {a} of the {b}, but the code returns a tuple. That is unrelated, so I will leave it.",
    "I could also use an f-string, but the surrounding code uses `%` formatting, so I will stay consistent with it.",
    "Line {line} of `{f}` is where `{a}` gets overwritten by the loop variable; that is why the name is lost.",
    "Rather than special-casing `{a}`, the fix should go where the label is built, so that every check benefits.",
    "Before editing, I want to be sure about the expected wording; the tests are the best specification.",
    "The behaviour on the main branch of {pkg} is the same, so this is not a regression from a recent change.",
    "I should not modify the tests themselves, only the source, as the task instructions say.",
    "It is worth checking `{f2}` as well, since it has a near copy of this logic.",
    "So the plan is clear, but I want to confirm how `{fn}` behaves when `{a}` is empty.",
    "Looking more carefully, the check runs once per item of `{a}`, and the index comes from `enumerate`, so the item itself is available right there.",
    "One option is to pass the whole `{a}` object down; another is to pass only its name. The second keeps `{fn2}` simpler.",
    "I wonder whether `{fn}` is also used by the system checks framework for `{b}`; if so, the message change shows up there too.",
    "The comment above line {line} says the label is kept short on purpose, but the PR explicitly asks for the name, so that reasoning no longer holds.",
    "Let me reconsider: the failing case is when `{a}` refers to something that does not exist, and then `{fn2}` raises before the message is built.",
    "The output is long, but the key line is the one that formats the message with `{a}` and `{b}`.",
    "This is consistent with the PR description: {err}",
    "The expected message after the fix would be something like {err}",
    "There might be a caching layer in `{f2}` as well, which means a stale `{a}` could survive the change; I will keep that in mind when testing.",
    "I do not see any other place that catches this exception, so changing the text is safe.",
    "The code is older than the f-string era of {pkg}, which explains the mix of `%` and `.format` in `{f}`.",
    "To be safe, I will keep the old wording and only insert the name, so that existing translations still mostly match.",
    "`{fn2}` returns a list, not a single error, so the fix has to keep returning a list.",
    "The {n} tests around it use `assertEqual` on the whole message, so they pin the wording exactly.",
)
PLAN = (
    "find where the message for `{a}` is built in `{f}`",
    "read `{fn}` and `{fn2}` to see how the label is passed",
    "write `reproduce_issue.py` that triggers the check with an invalid `{a}`",
    "change the message so it includes the name, following `{fn2}`",
    "run `{t}` and the reproduction script again",
    "look for the same pattern in `{f2}`",
    "check the edge case where `{a}` is a callable",
    "submit the diff",
)
ERRORS = (
    "\"The value of '{a}[0]' is not a callable, an attribute of '{cls}', or an attribute of '{pkg}.{cls}'.\"",
    "\"The value of '{a}[{n}]' refers to '{b}', which is not a field of '{cls}'.\"",
    "`ValueError: The value of '{a}[0]' is not a callable.`",
)
ACT = {
    "explore": ("Let me search for `{fn}` across the repository.", "Let's find the files that define or use `{fn}`."),
    "grep": ("Let me grep for `{fn}` in `{f}`.", "Let's find the lines of `{f}` that mention `{fn}`."),
    "read": (
        "Let me look at `{f}` around line {line}.",
        "Let's read the code of `{fn}` in `{f}`.",
        "Let me view more of `{f}` to see the rest of `{fn}`.",
    ),
    "script": (
        "Let me write a small script to reproduce the issue.",
        "Let me reproduce the problem with a minimal script.",
    ),
    "reproduce": ("Now let's run the reproduction script.", "Let me run the script again to see the message."),
    "edit": (
        "Let me apply the change to `{f}`.",
        "I will update `{fn}` in `{f}` now.",
        "Let me make the edit with a small Python script so the quoting is safe.",
    ),
    "test": (
        "Now let's run the tests in `{t}` to make sure nothing breaks.",
        "Let me run the relevant tests.",
        "Let's run `{t}` again to confirm the fix.",
    ),
    "test_ok": ("Let me run the tests once more.", "Let me run the wider test module too."),
}
SEEN["grep"] = SEEN["explore"]
#: Token targets of the THOUGHT: mean ~410 (+ ~45 of arguments ≈ 450 per turn), long-tailed:
#: coding agents think longer than the support agent (~400), ~420 over the whole set.
THOUGHT_MEAN, THOUGHT_SIGMA = 410, 1.0
SUBMIT_MEAN, SUBMIT_SIGMA = 240, 0.6

SUMMARY = (
    "The root cause was in `{fn}`: the message was formatted with the label and the index only, so the name of the {a} was lost.",
    "I changed `{f}` so that the message now includes the name, following the pattern already used by `{fn2}`.",
    "The reproduction script now prints the expected message, and the tests in `{t}` pass.",
    "I also checked the edge case where `{a}` is a callable; the message uses its `__name__` there.",
    "No test files were modified, as the instructions require.",
    "The change is small and consistent with the other checks in {pkg}.",
    "I removed nothing else; `reproduce_issue.py` is not part of the package, so it does not matter for the diff.",
    "The same pattern in `{f}` was fixed in the neighbouring check as well, to keep the messages consistent.",
    "The diff touches one function and keeps the error id unchanged, so downstream code matching on the id is unaffected.",
    "The wording follows the existing messages, so translators see a familiar structure.",
)


def kind_of(phase: str, cmd: str, rc: int) -> str:
    """The SEEN/ACT key of a step: `script` (writing the reproduction), `test_ok`, or the phase."""
    if phase == "reproduce" and cmd.startswith("cat <<"):
        return "script"
    if phase == "explore" and cmd.startswith("grep"):
        return "grep"
    if phase == "test" and rc == 0:
        return "test_ok"
    return phase


class Thought:
    """Writes the THOUGHT of each step: react to the last output, analyse, say what comes next."""

    def __init__(self, repo: Repo, rng: random.Random) -> None:
        self.repo, self.rng = repo, rng
        self.lengths = Lengths(rng, THOUGHT_MEAN, THOUGHT_SIGMA, lo=12, hi=6000)
        self.slots = Slots(
            {"pkg": repo.pkg.split("/")[-1]},
            {
                "a": repo.ident,
                "b": repo.ident,
                "c": repo.ident,
                "fn2": lambda: rng.choice(repo.funcs),
                "f2": lambda: rng.choice(repo.files),
                "t": lambda: rng.choice(repo.tests),
                "n": lambda: rng.randint(2, 40),
                "line": lambda: rng.randint(10, 1800),
                "cls": lambda: "".join(w.capitalize() for w in repo.ident().split("_")) + "Admin",
                "err": lambda: rng.choice(ERRORS).format_map(self.slots),
            },
        )

    def __call__(self, last: tuple[str, str] | None, kind: str) -> str:
        """`last` is (kind, output) of the previous step, None on the first one."""
        r, slots = self.rng, self.slots
        slots.update(f=self.repo.f, fn=self.repo.fn, line=self.repo.line)
        budget = self.lengths.chars()
        seen = SEEN[last[0] if last else None]
        if not last:
            head = [s.format_map(slots) for s in seen]
        else:  # a short THOUGHT is often just the next step ("Let me run the tests.")
            head = [r.choice(seen).format_map(slots)] if budget > 300 else []
        extra: list[str] = []
        if last and budget > 1200 and last[1].count("\n") > 4 and r.random() < 0.4:
            lines = last[1].splitlines()
            a = r.randrange(len(lines) - 3)
            extra.append("\n```\n" + "\n".join(lines[a : a + r.randint(3, 10)]) + "\n```")
        if budget > 1500 and r.random() < 0.3:
            steps = r.sample(PLAN, r.randint(3, 6))
            extra.append("\nMy plan:\n" + "\n".join(f"{i + 1}. {p.format_map(slots)}" for i, p in enumerate(steps)))
        pick = sentences(r, ANALYSIS, slots)
        return compose(r, budget, head + extra, pick, [r.choice(ACT[kind]).format_map(slots)])


def summary(repo: Repo, rng: random.Random) -> str:
    """The THOUGHT of the final submit step: a short wrap-up of the fix."""
    slots = Slots(
        {"pkg": repo.pkg.split("/")[-1], "f": repo.f, "fn": repo.fn},
        {"a": repo.ident, "fn2": lambda: rng.choice(repo.funcs), "t": lambda: rng.choice(repo.tests)},
    )
    budget = Lengths(rng, SUBMIT_MEAN, SUBMIT_SIGMA, lo=12, hi=600).chars()
    return compose(
        rng,
        budget,
        ["The fix is in place and the tests pass."],
        sentences(rng, SUMMARY, slots),
        ["Let me submit the changes."],
    )
