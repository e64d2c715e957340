"""The `trajbench` command line: a thin click layer over the traces, replay and eval libraries.

Each command parses options, calls one library function and prints. `main` is the one error
boundary: the packages' own errors become `Error: …` with exit code 1, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

import traces
from traces.formats import FORMATS


def _known_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [traces.TraceError]
    for module, name in (("replay", "ReplayError"), ("eval", "EvalError")):
        try:
            errors.append(getattr(__import__(module), name))
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(traces.__version__, prog_name="trajbench")
def cli() -> None:
    """trajbench: benchmark how an inference system serves multi-turn AI agents.

    Start with `trajbench demo`. The pipeline is: `traces build` (traces → salted per-turn
    shards), `replay run` (closed-loop streaming against an endpoint), `eval` (accuracy gates).
    """


# ---------------------------------------------------------------- traces
@cli.group("traces")
def traces_group() -> None:
    """Convert, validate, build, inspect and analyse agent trace datasets."""


FORMAT_OPTION = click.option(
    "--format", "fmt", type=click.Choice(sorted(FORMATS)), default="mlperf-jsonl", show_default=True,
    help="Input trace format.",
)


@traces_group.command("validate")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@FORMAT_OPTION
def traces_validate(sources: tuple[str, ...], fmt: str) -> None:
    """Check SOURCES against the dataset rules (SPEC §2) and list every violation."""
    n_traj, n_turns, errors = traces.validate_sources(sources, fmt)
    for err in errors:
        click.echo(str(err), err=True)
    if errors:
        raise traces.TraceError(f"{len(errors)} error(s); {n_traj} valid trajectories ({n_turns} client turns)")
    click.echo(f"ok: {n_traj} trajectories, {n_turns} client turns")


@traces_group.command("build")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@FORMAT_OPTION
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Shard folder to create.")
@click.option("--name", default=None, help="Dataset name (shard file stem); default: the folder name.")
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(min=1), help="Passes over the dataset to materialise.")
@click.option("--salt", type=click.Choice(traces.SALT_MODES), default="mlperf", show_default=True, help="Cache-isolation salting (SPEC §4); strong is research-only.")
@click.option("--seed", default=0, show_default=True, help="Seed of --salt strong.")
@click.option("--no-history-marker", is_flag=True, help="Send byte-identical reference prompts (no SPEC §5 marker).")
@click.option("--tokenizer", default=None, help="Fill token columns: NAME or NAME:PATH (see `trajbench tokenizers`).")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out folder (atomically).")
def traces_build(sources: tuple[str, ...], fmt: str, out: str, name: str | None, repeats: int, salt: str, seed: int, no_history_marker: bool, tokenizer: str | None, overwrite: bool) -> None:
    """Build salted, deterministic per-turn Parquet shards from SOURCES."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    opts = traces.BuildOptions(format=fmt, salt=salt, seed=seed, repeats=repeats, history_marker=not no_history_marker, name=name or Path(out).name)
    counter = _load_counter(tokenizer)
    with Progress(TextColumn("building"), BarColumn(), MofNCompleteColumn(), TextColumn("turns"), TimeElapsedColumn(), transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task("build", total=None)
        result = traces.build_shards(sources, out, opts, counter=counter, overwrite=overwrite, progress=lambda n: bar.advance(task, n))
    m = result.manifest
    c = m["counts"]
    click.echo(f"built {out}: {c['trajectories']} trajectories, {c['instances']} instances, {c['client_turns']} client turns in {len(m['shards'])} shard(s)")
    click.echo(f"content hash {m['content_hash']}")


def _load_counter(spec: str | None):  # type: ignore[no-untyped-def]
    if spec is None:
        return None
    from traces.tokenizers import load_tokenizer

    return load_tokenizer(spec)


@traces_group.command("show")
@click.argument("shards_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--trajectory", "trajectory_id", required=True, help="Source conversation id.")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--turn", required=True, type=int, help="The dataset's turn number of a client row (SPEC §1).")
@click.option("--profile", default="kimi-k3", show_default=True, help="Model profile whose request parameters are used.")
@click.option("--model", default=None, help="Served model name, if not the profile's.")
def traces_show(shards_dir: str, trajectory_id: str, repeat: int, turn: int, profile: str, model: str | None) -> None:
    """Print the exact JSON body replay will send for one turn."""
    from traces.show import turn_body

    body = turn_body(shards_dir, trajectory_id, repeat, turn, traces.get_profile(profile), model=model)
    click.echo(json.dumps(body, indent=2, ensure_ascii=False))


@traces_group.command("export")
@click.argument("shards_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["mlperf-jsonl"]), default="mlperf-jsonl", show_default=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Output file (.jsonl or .jsonl.zst).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1))
def traces_export(shards_dir: str, fmt: str, out: str, repeat: int) -> None:
    """Write built shards back out as official flat rows."""
    from traces.export import export_jsonl

    n = export_jsonl(shards_dir, out, repeat=repeat)
    click.echo(f"wrote {n} rows to {out}")


# ---------------------------------------------------------------- replay
@cli.group("replay")
def replay_group() -> None:
    """Replay shards closed-loop against an endpoint; sweep concurrency; calibrate the harness."""


# ---------------------------------------------------------------- eval
@cli.group("eval")
def eval_group() -> None:
    """Accuracy gates (inline, OSL, SWE-bench) and the compliance check of a submission."""


# ---------------------------------------------------------------- report
def _label_dirs(dirs: tuple[str, ...], labels: tuple[str, ...]) -> list[tuple[str, Path]]:
    named = {}
    for item in labels:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise click.BadParameter(f"{item!r}: expected NAME=DIR", param_hint="--label")
        named[Path(folder).resolve()] = name
    return [(named.get(Path(d).resolve(), Path(d).resolve().name), Path(d)) for d in dirs] + [
        (name, p) for p, name in named.items() if p not in {Path(d).resolve() for d in dirs}
    ]


@cli.command("report")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for report.html, PNGs and points.csv/json.")
@click.option("--label", "labels", multiple=True, metavar="NAME=DIR", help="Name a system's run or sweep folder (repeatable).")
@click.option("--cost-per-hour", type=click.FloatRange(min=0, min_open=True), default=None, help="System cost in $/h: adds tok/s per dollar-hour.")
@click.option("--power-watts", type=click.FloatRange(min=0, min_open=True), default=None, help="System power in W: adds tok/s per watt.")
def report(dirs: tuple[str, ...], out: str, labels: tuple[str, ...], cost_per_hour: float | None, power_watts: float | None) -> None:
    """Pareto step curve and comparison report from run or sweep folders DIRS."""
    from replay.report import build_report

    inputs = _label_dirs(dirs, labels)
    if not inputs:
        raise click.UsageError("give at least one run or sweep folder")
    page = build_report(inputs, Path(out), cost_per_hour=cost_per_hour, power_watts=power_watts)
    click.echo(f"report: {page}")


# ---------------------------------------------------------------- demo
@cli.command("demo")
@click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False), help="Folder for everything the demo writes.")
def demo(out: str) -> None:
    """Run the main job end to end on the bundled sample traces and the embedded simulator."""
    from eval.demo import run_demo

    run_demo(out, echo=click.echo)


def main(argv: list[str] | None = None) -> None:
    """Console entry point and the one error boundary."""
    known = _known_errors()
    try:
        cli.main(args=argv, prog_name="trajbench", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except known as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
