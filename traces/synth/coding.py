"""Synthetic agentic-coding trajectories: a bash-tool agent fixing an issue in a Python repository.

Each trajectory is one task prompt, then (THOUGHT + one `bash` call, tool output) pairs walking
through the phases real SWE-agent runs show — explore the tree, read files, reproduce the bug,
edit, run tests (failing first, then passing) — and a final submit call. The THOUGHTs
(`coding_text`) are as long as the reference model's answers (docs/accuracy.md OSL band). Tool outputs are
code listings, grep hits, tracebacks and pytest reports sized like the fixture's (median ~400
characters, long tail), so the prompt grows to tens of thousands of tokens. Tool delays follow
the recorded fixture's distribution (`TOOL_DELAY_QUANTILES`).
"""

from __future__ import annotations

import json
import random
from bisect import bisect_right

from ..formats import BASH_TOOL
from ..model import Row, Trajectory
from .coding_text import Thought, kind_of, summary

#: Quantiles of the tool-row `delay_seconds` of the shared 20-trajectory coding fixture (987 rows,
#: 636 s in total): (cumulative probability, seconds). Sampled by inverse CDF with linear steps.
TOOL_DELAY_QUANTILES = (
    (0.0, 0.0384),
    (0.05, 0.0473),
    (0.10, 0.0491),
    (0.15, 0.0509),
    (0.20, 0.0523),
    (0.25, 0.0542),
    (0.30, 0.0556),
    (0.35, 0.0571),
    (0.40, 0.0587),
    (0.45, 0.0609),
    (0.50, 0.0635),
    (0.55, 0.0681),
    (0.60, 0.0747),
    (0.65, 0.0998),
    (0.70, 0.1437),
    (0.75, 0.2065),
    (0.80, 0.2510),
    (0.85, 0.3189),
    (0.90, 0.4790),
    (0.93, 0.6718),
    (0.95, 1.0803),
    (0.97, 1.7229),
    (0.98, 2.9296),
    (0.99, 4.1760),
    (0.995, 26.0142),
    (0.998, 76.3917),
    (1.0, 120.1031),
)
_QP = [q for q, _ in TOOL_DELAY_QUANTILES]

SYSTEM = "You are a helpful assistant that can interact with a computer shell to solve programming tasks."
REPOS = (
    ("django", "django", "django", ("db/models", "contrib/admin", "forms", "utils", "core/management", "http")),
    ("sympy", "sympy", "sympy", ("core", "printing", "solvers", "matrices", "functions/elementary", "simplify")),
    (
        "scikit-learn",
        "scikit-learn",
        "sklearn",
        ("linear_model", "preprocessing", "utils", "ensemble", "metrics", "model_selection"),
    ),
    ("sphinx-doc", "sphinx", "sphinx", ("ext/autodoc", "domains", "builders/html", "util", "writers")),
    ("matplotlib", "matplotlib", "lib/matplotlib", ("axes", "backends", "colors", "legend", "text", "figure")),
    ("pydata", "xarray", "xarray", ("core", "backends", "coding", "plot")),
    ("astropy", "astropy", "astropy", ("units", "io/fits", "coordinates", "table", "modeling", "wcs")),
    ("pytest-dev", "pytest", "src/_pytest", ("python", "fixtures", "assertion", "config", "mark")),
    ("psf", "requests", "requests", ("models", "sessions", "adapters", "utils")),
    ("pallets", "flask", "src/flask", ("app", "blueprints", "cli", "config", "json")),
)

WORDS = (
    "field value model admin check name index label obj item config result node expr args kwargs data "
    "path parser token cache manager query options request response handler array dims coords units axis "
    "figure artist legend text column table header record schema context state key default attr method "
    "source target format style width offset size count level limit prefix suffix pattern match group "
    "error message warning reason status code mode flag option setting param element entry row"
).split()
VERBS = "get set check build parse render resolve validate update create find load save apply convert normalize".split()


def tool_delay(rng: random.Random) -> float:
    u = rng.random()
    i = min(bisect_right(_QP, u), len(_QP) - 1)
    (q0, v0), (q1, v1) = TOOL_DELAY_QUANTILES[i - 1], TOOL_DELAY_QUANTILES[i]
    return round(v0 + (v1 - v0) * (u - q0) / (q1 - q0), 6)


def coding_ids(rng: random.Random, n: int) -> list[str]:
    """Unique task ids like `django__django-16899`, cycling over the repositories."""
    ids: list[str] = []
    seen: set[str] = set()
    while len(ids) < n:
        org, repo, _, _ = REPOS[len(ids) % len(REPOS)]
        cid = f"{org}__{repo}-{rng.randint(1000, 27999)}"
        if cid not in seen:
            seen.add(cid)
            ids.append(cid)
    return ids


class Repo:
    def __init__(self, rng: random.Random, cid: str) -> None:
        self.rng = rng
        org = cid.split("__")[0]
        self.org, self.repo, self.pkg, subs = next(r for r in REPOS if r[0] == org)
        self.files = [
            f"{self.pkg}/{rng.choice(subs)}/{rng.choice(WORDS)}{rng.choice(('', 's', '_utils', '_base'))}.py"
            for _ in range(6)
        ]
        self.funcs = [f"{rng.choice(VERBS)}_{rng.choice(WORDS)}" for _ in range(8)]
        self.tests = [f"tests/{rng.choice(WORDS)}_tests/test_{rng.choice(WORDS)}.py" for _ in range(3)]
        # The target of the current command, which its THOUGHT talks about.
        self.f, self.fn, self.line = self.files[0], self.funcs[0], 1

    def ident(self) -> str:
        r = self.rng
        return r.choice(WORDS) if r.random() < 0.6 else f"{r.choice(WORDS)}_{r.choice(WORDS)}"

    def code(self, lines: int, start: int = 1) -> str:
        """Python-looking source lines (numbered when `start` > 0 as `sed -n`/`nl` would not)."""
        r = self.rng
        out = []
        depth = 1
        for _ in range(lines):
            kind = r.random()
            ind = "    " * depth
            if kind < 0.08:
                depth = 1
                out.append(f"    def {r.choice(self.funcs)}(self, {self.ident()}, {self.ident()}=None):")
                depth = 2
            elif kind < 0.2:
                out.append(f"{ind}if {self.ident()} is not None and {self.ident()}.{self.ident()}:")
                depth = min(depth + 1, 4)
            elif kind < 0.28:
                out.append(f'{ind}"""{r.choice(VERBS).capitalize()} the {r.choice(WORDS)} of the {r.choice(WORDS)}."""')
            elif kind < 0.38:
                out.append(f"{ind}return {r.choice(self.funcs)}({self.ident()}, {r.choice(WORDS)}={self.ident()})")
                depth = max(1, depth - 1)
            elif kind < 0.45:
                out.append("")
            elif kind < 0.55:
                out.append(
                    f"{ind}raise {r.choice(('ValueError', 'TypeError', 'ImproperlyConfigured', 'KeyError'))}(\"The value of '%s' is not a {r.choice(WORDS)}.\" % {self.ident()})"
                )
            else:
                out.append(
                    f"{ind}{self.ident()} = self.{r.choice(self.funcs)}({self.ident()}, {self.ident()}[{r.randint(0, 9)}])"
                )
        return "\n".join(out) + "\n"

    def command_and_output(self, phase: str, step: int) -> tuple[str, str, int]:
        """(bash command, its output, return code) for one step of the given phase."""
        r = self.rng
        f = self.f = r.choice(self.files)
        fn = self.fn = r.choice(self.funcs)
        self.line = r.randint(10, 1800)
        if phase == "explore":
            if r.random() < 0.5:
                cmd = f'find . -type f -name "*.py" | xargs grep -l "{fn}" | head -20'
                out = "\n".join(f"./{r.choice(self.files + self.tests)}" for _ in range(r.randint(2, 15))) + "\n"
            else:
                cmd = f'grep -n "{fn}" {f}'
                out = (
                    "\n".join(f"{r.randint(10, 1800)}:    {self.code(1).strip()}" for _ in range(r.randint(1, 12)))
                    + "\n"
                )
            return cmd, out, 0
        if phase == "read":
            a = self.line = r.randint(1, 1500)
            n = int(min(260, r.lognormvariate(3.0, 0.8))) + 3
            return f"sed -n '{a},{a + n}p' {f}", self.code(n), 0
        if phase == "reproduce":
            if step % 2 == 0:
                body = self.code(r.randint(6, 18), 0)
                return f"cat <<'EOF' > reproduce_issue.py\nfrom {self.pkg.split('/')[-1]} import {fn}\n{body}EOF", "", 0
            tb = "".join(
                f'  File "/testbed/{r.choice(self.files)}", line {r.randint(10, 1800)}, in {r.choice(self.funcs)}\n    {self.code(1).strip()}\n'
                for _ in range(r.randint(2, 7))
            )
            return (
                "python reproduce_issue.py",
                f"Traceback (most recent call last):\n{tb}ValueError: The value of '{self.ident()}[0]' is not a callable.\n",
                1,
            )
        if phase == "edit":
            old, new = self.code(1).strip(), self.code(1).strip()
            if r.random() < 0.6:
                return f"sed -i 's/{old[:40]}/{new[:40]}/' {f}", "", 0
            return (
                f"python - <<'EOF'\nimport re\np = '{f}'\ns = open(p).read()\ns = s.replace({old!r}, {new!r})\nopen(p, 'w').write(s)\nEOF",
                "",
                0,
            )
        t = r.choice(self.tests)
        fails = r.random() < 0.45
        cases = r.randint(4, 60)
        lines = [
            "============================= test session starts ==============================",
            f"collected {cases} items",
            "",
            f"{t} " + "".join(r.choice("....F" if fails else ".") for _ in range(cases)),
        ]
        if fails:
            lines += [
                "",
                "=================================== FAILURES ===================================",
                f"____________________ test_{fn} ____________________",
                self.code(r.randint(8, 40)),
                f"E       AssertionError: assert '{self.ident()}' == '{self.ident()}'",
            ]
            lines.append(
                f"=========================== 1 failed, {cases - 1} passed in {r.uniform(0.2, 9):.2f}s ==========================="
            )
        else:
            lines.append(
                f"============================== {cases} passed in {r.uniform(0.2, 9):.2f}s =============================="
            )
        return f"python -m pytest {t} -x -q 2>&1 | tail -80", "\n".join(lines) + "\n", 1 if fails else 0


def _phase(pos: float, rng: random.Random) -> str:
    if rng.random() < 0.15:
        return "read"
    if pos < 0.2:
        return "explore"
    if pos < 0.45:
        return "read"
    if pos < 0.55:
        return "reproduce"
    if pos < 0.72:
        return "edit"
    return "test"


def _task(repo: Repo, rng: random.Random, cid: str) -> str:
    fn = rng.choice(repo.funcs)
    issue = (
        f"{fn.replace('_', ' ').capitalize()}: error message for {repo.ident()} does not include the {repo.ident()} name\n"
        f"Description\n\t\nWhen calling `{fn}` with an invalid {repo.ident()}, the current error message only shows the index "
        f"of the value at fault but not its name:\nThe value of '{repo.ident()}[0]' is not a callable, an attribute of '{repo.ident()}'.\n"
        f"Other checks such as `{rng.choice(repo.funcs)}` include the name. It would be good to unify this.\n"
    )
    return (
        f"<pr_description>\nConsider the following PR description:\n{issue}\n</pr_description>\n\n<instructions>\n# Task Instructions\n\n"
        "## Overview\n\nYou're a software engineer interacting continuously with a computer by submitting commands.\n"
        "You'll be helping implement necessary changes to meet requirements in the PR description.\n"
        "Your task is specifically to make changes to non-test files in the current directory in order to fix the issue "
        "described in the PR description in a way that is general and consistent with the codebase.\n\n"
        "For each response:\n\n1. Include a THOUGHT section explaining your reasoning\n2. Provide one or more bash tool calls to execute\n\n"
        "## Important Boundaries\n\n- MODIFY: Regular source code files in /testbed\n- DO NOT MODIFY: Tests, configuration files\n\n"
        "## Recommended Workflow\n\n1. Analyze the codebase\n2. Create a script to reproduce the issue\n3. Edit the source code\n"
        "4. Verify your fix\n5. Test edge cases\n\n## Submission\n\nWhen done, run `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached`.\n"
        f"</instructions>\n\nRepository: {repo.org}/{repo.repo} (task {cid})"
    )


def _call(k: int, command: str) -> dict[str, object]:
    return {
        "id": f"functions.bash:{k}",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


def coding_trajectory(rng: random.Random, cid: str, client_turns: int, *, open_ended: bool) -> Trajectory:
    """One coding trajectory with exactly `client_turns` client rows (1 user + tool rows)."""
    repo = Repo(rng, cid)
    rows = [Row(1, "user", content=_task(repo, rng, cid), system=SYSTEM, tools=(BASH_TOOL,))]
    steps = client_turns - 1
    thought = Thought(repo, rng)
    last: tuple[str, str] | None = None
    for k in range(steps):
        phase = _phase(k / max(1, steps), rng)
        cmd, out, rc = repo.command_and_output(phase, k)
        kind = kind_of(phase, cmd, rc)
        rows.append(Row(len(rows) + 1, "assistant", reasoning_content=thought(last, kind), tool_calls=(_call(k, cmd),)))
        body = (
            f"<returncode>{rc}</returncode>\n<output>\n{out}</output>"
            if out
            else f"<returncode>{rc}</returncode>\n<output>\n</output>"
        )
        rows.append(
            Row(
                len(rows) + 1,
                "tool",
                tool_results=({"tool_call_id": f"functions.bash:{k}", "content": body},),
                delay_seconds=tool_delay(rng),
            )
        )
        last = (kind, out)
    if not open_ended:
        final = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
        rows.append(
            Row(len(rows) + 1, "assistant", reasoning_content=summary(repo, rng), tool_calls=(_call(steps, final),))
        )
    return Trajectory(cid, tuple(rows), source="synthetic")
