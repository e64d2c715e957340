"""The jobs a user runs end to end, across traces, replay and eval: a scored run, a scored
sweep, the report with every point's verdicts, and `trajbench demo`.

It sits beside cli.py, above the three packages (eval imports replay imports traces), because
each job drives more than one of them; the CLI only parses options and prints what these return.

The demo: a small synthetic trace set → validated → salted shards (with Qwen3.6 token counts) →
a concurrency sweep against the embedded simulator → inline and OSL gates per point → the Pareto
report. Every step is the library call a user would make, nothing is faked. Two shortcuts keep it
quick, and it says so: recorded delays are skipped, and the simulator is the one `replay run`
starts without --endpoint (`replay.sim.embedded_config`): its step model runs 64x faster than the
default and its answers are the recorded ones (oracle mode: a perfect model). The official gates
belong to the official dataset (on a synthetic one a perfect model misses the OSL band), so the
demo judges with research gates derived from its own dataset (`--gates dataset`,
docs/accuracy.md): they pass, and the report labels the frontier as not an official result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import replay
import traces
from eval import GATES_OPTION, EvalError, OslResult, Scores
from replay import RunConfig

if TYPE_CHECKING:
    from replay import RunOutcome

Echo = Callable[[str], None]

CONCURRENCIES = (1, 2, 4, 8)
#: The official gates belong to the official dataset; the demo's synthetic one is judged by its own.
DEMO_GATES = "dataset"
#: The profile of the tokenizer the demo's shards are counted with, so the gates and the shards
#: count the same tokens (docs/accuracy.md).
DEMO_PROFILE = "qwen3.6-35b-a3b"

#: The options of `replay run` and `replay sweep`: the replay's own, and the gates that judge it.
SCORED_RUN_OPTIONS = (*replay.RUN_OPTIONS, GATES_OPTION)
SCORED_SWEEP_OPTIONS = (*replay.SWEEP_RUN_OPTIONS, GATES_OPTION)


def judged_by(config: RunConfig, gates: str) -> RunConfig:
    """The configuration whose run.json records the gates it is judged by, so `--config run.json`
    judges the replay alike (a run that passed under research gates stays under them)."""
    return replace(config, extra_options={**config.extra_options, GATES_OPTION.key: gates})


@dataclass(frozen=True)
class PointVerdict:
    """The accuracy gates of one Pareto point, run right after its replay (each writes its file
    into the run folder, which the report reads)."""

    scores: Scores | None
    osl: OslResult | None
    problems: list[str] = field(default_factory=list)  # a gate that could not run, and why

    @property
    def passed(self) -> bool:
        return (
            self.scores is not None
            and self.osl is not None
            and self.scores.passed is not False
            and self.osl.passed is not False
        )

    def lines(self) -> list[str]:
        from eval import inline_lines, osl_lines

        out = inline_lines(self.scores) if self.scores is not None else []
        out += osl_lines(self.osl) if self.osl is not None else []
        return out + self.problems

    def verdicts(self) -> list[str]:
        """The two gates' verdict lines (PASS, FAIL or n/a with the bar), then any problem."""
        from eval import inline_lines, osl_lines

        def verdict(gate: str, lines: list[str]) -> list[str]:
            return [f"{gate}: {line}" for line in lines if line.startswith(("PASS", "FAIL", "n/a"))]

        out = verdict("inline", inline_lines(self.scores)) if self.scores is not None else []
        out += verdict("OSL", osl_lines(self.osl)) if self.osl is not None else []
        return out + self.problems


def evaluate_point(run_dir: str | Path, gates: str = "official", *, progress: str = "none") -> PointVerdict:
    """Score inline accuracy and the OSL gate of a run folder, against the bars of `gates`
    (docs/accuracy.md: official, dataset or off); `progress` is the `--progress` mode of both
    (a tokenizer recount of a long run's answers takes a while). The run folder is opened once:
    both gates share its records and its ground truth, read and parsed once. Blocking work:
    from async code, call it through `asyncio.to_thread` (as `scored_run` and `scored_sweep` do)."""
    from eval import open_run, osl_gate, score_run

    problems = []
    scores = osl = None
    try:
        run = open_run(run_dir)
    except EvalError as exc:  # neither gate can read the folder: both say why, as each would
        return PointVerdict(None, None, [f"inline score not computed: {exc}", f"OSL gate not computed: {exc}"])
    try:
        with traces.Progress("inline", mode=progress) as bar:
            scores = score_run(run, gates=gates, progress=bar)
    except EvalError as exc:  # the run itself is complete; say why this gate has no result
        problems.append(f"inline score not computed: {exc}")
    try:
        with traces.Progress("osl", mode=progress) as bar:
            osl = osl_gate(run, gates=gates, progress=bar)
    except EvalError as exc:
        problems.append(f"OSL gate not computed: {exc}")
    return PointVerdict(scores, osl, problems)


@dataclass(frozen=True)
class RunResult:
    """A finished `replay run`: its folder, how it ended, and its gates (none when every turn
    failed: there is nothing to score)."""

    run_dir: Path
    outcome: RunOutcome
    verdict: PointVerdict | None
    signal_exit: int | None = None  # 128 + the signal that interrupted the run (130 SIGINT, 143 SIGTERM)


async def scored_run(config: RunConfig, gates: str = "official") -> RunResult:
    import asyncio  # here: the command line imports this module, and starts without asyncio

    interrupt = replay.Interrupt()  # ours, so the exit code can name the signal that came
    with interrupt.installed():
        run_dir = await replay.run_replay(judged_by(config, gates), interrupt=interrupt)
    outcome = replay.RunOutcome.read(run_dir)
    # scored off the event loop: reading and scoring thousands of records is seconds of CPU
    verdict = (
        None
        if outcome.all_failed
        else await asyncio.to_thread(evaluate_point, run_dir, gates, progress=config.progress)
    )
    return RunResult(run_dir, outcome, verdict, interrupt.exit_code if interrupt.requested else None)


async def scored_sweep(
    base: RunConfig,
    concurrencies: Sequence[int],
    out: str | Path,
    echo: Echo = print,
    *,
    gates: str = "official",
    add: bool = False,
) -> Path:
    """A sweep whose every point is scored as it finishes (its verdict lines echoed). Kept
    points judged by other gates than `gates` are judged again (no request is sent), so the
    points of one sweep are judged alike. `replay.run_sweep` calls `after_point` off its event
    loop (in a thread), so scoring a point never blocks the loop."""
    import asyncio

    from eval import gate_verdicts

    judged: set[Path] = set()

    def after_point(run_dir: Path) -> None:
        judged.add(run_dir)
        for line in evaluate_point(run_dir, gates, progress=base.progress).lines():
            echo(f"  {line}")

    folder = await replay.run_sweep(
        judged_by(base, gates), concurrencies, out, after_point=after_point, echo=echo, add=add
    )
    for point in replay.SweepPlan.read(folder).points:
        run_dir = folder / point.dir
        modes = gate_verdicts(run_dir).modes
        if point.status == "done" and run_dir not in judged and modes and modes != (gates,):
            echo(f"C={point.concurrency}: judged again with --gates {gates}")
            await asyncio.to_thread(after_point, run_dir)
    return folder


def build_report(
    inputs: list[tuple[str, Path]], out: Path, *, cost_per_hour: float | None = None, power_watts: float | None = None
) -> Path:
    """The Pareto report, every point drawn with its accuracy verdicts."""
    from eval import gate_verdicts

    return replay.build_report(
        inputs, out, cost_per_hour=cost_per_hour, power_watts=power_watts, gates_of=gate_verdicts
    )


async def run_demo(out: str, echo: Echo = print, *, scale: float = 0.01, progress: str = "auto") -> Path:
    """The demo; `progress` is the `--progress` mode of its long steps (synthesis, validation
    and build, each point of the sweep)."""
    from replay.sim import describe, embedded_config
    from traces.synth import synthesize
    from traces.tokenizers import load_tokenizer

    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "synthetic.jsonl.zst"
    with traces.Progress("synth", mode=progress) as bar:
        made = synthesize(src, seed=0, scale=scale, progress=bar)
    echo(
        f"[1/5] synthesised {made.trajectories} trajectories ({made.coding} coding, {made.workflow} workflow), {made.client_turns} client turns -> {src}"
    )
    with traces.Progress("validate", mode=progress) as bar:
        n_traj, n_turns, errors = traces.validate_sources([str(src)], "mlperf-jsonl", progress=bar)
    if errors:
        raise traces.TraceValidationErrors(errors)
    shards_dir = out_dir / "shards"
    with traces.Progress("build", total=n_turns, mode=progress) as bar:
        result = traces.build_shards(
            [str(src)],
            shards_dir,
            traces.BuildOptions(name="demo"),
            counter=load_tokenizer("qwen3.6"),
            overwrite=True,
            progress=bar,
        )
    echo(
        f"[2/5] validated and built {shards_dir}: {n_traj} trajectories, {n_turns} turns, salted (mlperf), content hash {result.manifest.content_hash[:16]}…"
    )
    sweep_dir = out_dir / "sweep"
    sim = embedded_config(str(shards_dir.resolve()))
    echo(
        f"[3/5] sweeping concurrency {', '.join(map(str, CONCURRENCIES))} against the embedded simulator ({describe(sim)}, delays skipped) …"
    )
    base = judged_by(
        RunConfig(
            shards=str(shards_dir),
            profile=DEMO_PROFILE,
            concurrency=1,
            inject_delays=False,
            progress=progress,
            overwrite=True,
            sim=sim,
        ),
        DEMO_GATES,
    )

    def after_point(run_dir: Path) -> None:
        for line in evaluate_point(run_dir, DEMO_GATES, progress=progress).verdicts():
            echo(f"      {line}")

    await replay.run_sweep(base, CONCURRENCIES, sweep_dir, after_point=after_point, echo=lambda m: echo(f"      {m}"))
    echo(
        "[4/5] every point scored: inline accuracy (scores.json) and the OSL gate (osl.json), by research gates "
        "derived from this dataset (--gates dataset; not an official result, docs/accuracy.md)"
    )
    page = build_report([("trajbench-sim", sweep_dir)], out_dir / "report")
    echo(f"[5/5] report: {page}")
    echo("      open it in a browser; `trajbench report --help` compares several systems on one chart")
    return page
