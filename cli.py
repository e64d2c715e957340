"""The `trajbench` command line: a thin click layer over the traces, replay and eval libraries
and the cross-package jobs (`jobs`).

Each command parses options, calls one library function and prints what it returns; it never
exits by itself. `main` is the one error boundary: the packages' own errors become `Error: …`
with exit code 1 (or the error's own `exit_code`: 3 when every turn of a replay failed, 130 or
143 for an interrupted run), a failed gate exits 1 after its verdict, never a traceback.
"""

from __future__ import annotations

import functools
import json
import math
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

import eval as evaluation
import jobs
import replay
import traces
from replay.sim import SimError

# Start-up: this module builds every command's options at import, so it imports only the light
# front doors (declarations, errors, constants); what a command runs (pyarrow, numpy, httpx, the
# trace formats, the submission tree, the simulator) is imported when it runs, by the library
# function it calls or in its body. tests/test_cli_startup.py keeps `trajbench --help` light.

F = TypeVar("F", bound=Callable[..., Any])
KNOWN_ERRORS = (traces.TraceError, replay.ReplayError, SimError, evaluation.EvalError)


def example(command_line: str, needs: str | None = None) -> Callable[[F], F]:
    """Append one `Example:` to a command's help (kept on its own line, not rewrapped). An
    example runs as written from a folder holding what it names (tests/test_examples.py runs
    each); `needs` says what else it takes (a server, Docker, …), printed under it."""

    def add(f: F) -> F:
        f.__doc__ = (f.__doc__ or "").rstrip() + f"\n\n    Example:\n\n    \b\n      {command_line}\n"
        if needs:
            f.__doc__ += f"      (needs {needs})\n"
        return f

    return add


class LazyChoice(click.Choice[str]):
    """A choice among a registry's names, read from the registry when the option is used or its
    help is shown (the trace formats, the submission divisions): `trajbench --help` and the other
    commands do not import it."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._names = names
        self._choices: tuple[str, ...] | None = None
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        if self._choices is None:
            self._choices = tuple(self._names())
        return self._choices

    @choices.setter
    def choices(self, value: Iterable[str]) -> None:
        self._choices = tuple(value)


class OneConcurrency(click.IntRange):
    """`replay run`'s concurrency: one integer >= 1; a list (`-c 1,2,4`) is `replay sweep`'s."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "," in value:
            self.fail(
                f"{value!r} is a list: `replay run` measures one concurrency; `trajbench replay sweep SHARDS_DIR "
                f"-c {value} --out DIR` runs one point each (docs/submitting.md)",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def declared_option(option: traces.Option) -> Callable[[F], F]:
    """The click parameter of a declared option (`traces.Option`): its name, type, range,
    default and help come from the declaration, the same wherever the option appears."""
    if option.kind == "argument":
        return click.argument(option.key, metavar=option.metavar, required=False, type=click.Path())
    kw: dict[str, Any] = {"default": option.default, "show_default": option.shows_default, "help": option.help}
    if option.type is bool:
        kw["is_flag"] = True
    elif option.multiple:
        kw["multiple"] = True
    elif option.choices:
        kw["type"] = click.Choice(option.choices)
    elif option.kind == "profile":
        kw["type"] = ProfileName()
    elif option.kind == "dir":
        kw["type"] = click.Path(file_okay=False)
    elif option.kind == "concurrency":  # one integer: a list is a sweep's (and said so)
        kw["type"] = OneConcurrency(min=int(option.minimum) if option.minimum is not None else None)
    elif option.type is int:
        kw["type"] = click.IntRange(min=int(option.minimum)) if option.minimum is not None else int
    elif option.type is float:
        kw["type"] = FiniteRange(min=option.minimum, min_open=option.open_minimum)
    if option.required:  # shown as required; `replay.settle` asks for it once a --config file had its say
        kw.update(required=True, cls=_RequiredOrInFile)
    made = click.option(option.flag, *([option.short] if option.short else []), option.key, **kw)
    if option.kind == "profile":  # --profiles FILE first: a user profile is known before --profile is checked
        return lambda f: PROFILES_OPTION(made(f))
    return made


class FiniteRange(click.FloatRange):
    """A float range that also refuses nan and inf (which pass every comparison, or break JSON)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        out = super().convert(value, param, ctx)
        if not math.isfinite(out):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return out


class _RequiredOrInFile(click.Option):
    """A required option that a --config file may give instead of the command line."""

    def value_is_missing(self, value: Any) -> bool:
        return False


#: What an example against an endpoint needs; the tests give it the simulator on a free port.
NEEDS_SERVER = "a server at that URL; `trajbench serve-sim --port 8000` stands in for one"


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """`--version`: the installed distribution's version, read from its metadata only when asked."""
    if value and not ctx.resilient_parsing:
        click.echo(f"trajbench, version {traces.__version__}")
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """trajbench: benchmark how an inference system serves multi-turn AI agents.

    Start with `trajbench demo`. The pipeline is: `traces build` (traces → salted per-turn
    shards), `replay run` (closed-loop streaming against an endpoint), `eval` (accuracy gates).
    """


# ---------------------------------------------------------------- traces
@cli.group("traces")
def traces_group() -> None:
    """Convert, validate, build, inspect and analyse agent trace datasets."""


#: Any path: `traces.Shards` says what it is when it is not a shard folder (a trace file or a
#: dataset folder is to be built first, and the message gives the command).
SHARDS_ARGUMENT = click.argument("shards_dir", type=click.Path())

FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=LazyChoice(lambda: sorted(traces.FORMATS)),
    default="mlperf-jsonl",
    show_default=True,
    help="Input trace format.",
)


JOBS_OPTION = click.option(
    "--jobs",
    "-j",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Worker processes over the trajectories; the output is the same bytes for any N (docs/files.md).",
)
PROGRESS_OPTION = declared_option(traces.PROGRESS_OPTION)


class ProfileName(click.ParamType[str]):
    """A model profile's name, checked against every profile this process knows: the built-ins
    and the user ones (`--profiles FILE`, TRAJBENCH_PROFILES; docs/maintainers.md)."""

    name = "PROFILE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return traces.get_profile(str(value)).name
        except traces.TraceError as exc:
            self.fail(str(exc), param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(n) for n in traces.profiles() if n.startswith(incomplete)]


def _load_profiles(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    if value:
        traces.add_profile_files(value)


#: Eager, so the files are loaded before --profile is checked against them.
PROFILES_OPTION = click.option(
    "--profiles",
    "profile_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    is_eager=True,
    expose_value=False,
    callback=_load_profiles,
    help=f"A user profile file (YAML or JSON) to load besides the built-ins (repeatable; also every file in the "
    f"folder ${traces.PROFILES_ENV}); see docs/maintainers.md.",
)


def profile_option(default: str | None, help: str, *, required: bool = False) -> Callable[[F], F]:
    """`--profile NAME` (built-in or user) and `--profiles FILE`, the same on every command."""

    def add(f: F) -> F:
        f = click.option(
            "--profile",
            default=default,
            required=required,
            show_default=default is not None,
            type=ProfileName(),
            help=help,
        )(f)
        return PROFILES_OPTION(f)

    return add


REGISTRY_OPTION = click.option(
    "--registry",
    default=None,
    type=click.Path(dir_okay=False),
    help=f"User official-hash registry (JSON, the shape of eval/data/official.json) for user profiles' datasets; "
    f"default: ${traces.REGISTRY_ENV} (docs/maintainers.md).",
)


INPUTS_HELP = """
    \b
    Each of SOURCES is a file (JSON Lines or JSON, plain or .zst; Parquet or Arrow, one record
    per row), a folder (a Hugging Face dataset saved with save_to_disk, a downloaded dataset
    repository: its data/ files, else every data file in it), or hf:ORG/NAME[@REVISION], a
    dataset in the local Hugging Face cache (HF_HUB_CACHE, HF_HOME); nothing is downloaded.
    What --format reads from each: docs/dataset-format.md ("Inputs").
"""


def _inputs_help(f: F) -> F:
    f.__doc__ = (f.__doc__ or "").rstrip() + "\n" + INPUTS_HELP
    return f


@traces_group.command("validate")
@example("trajbench traces validate traces.jsonl.zst --format mlperf-jsonl")
@click.argument("sources", nargs=-1, required=True, type=click.Path())
@FORMAT_OPTION
@_inputs_help
@PROGRESS_OPTION
def traces_validate(sources: tuple[str, ...], fmt: str, progress: str) -> None:
    """Check SOURCES against the dataset rules (docs/dataset-format.md) and list the violations
    (the first 20, then how many more)."""
    with traces.Progress("validate", mode=progress) as bar:
        n_traj, n_turns, errors = traces.validate_sources(sources, fmt, progress=bar)
    for line in traces.error_lines(errors):
        click.echo(line, err=True)
    if errors:
        raise traces.TraceError(
            f"{traces.error_count(errors):,} error(s); {n_traj:,} valid trajectories ({n_turns:,} client turns)"
        )
    click.echo(f"ok: {n_traj:,} trajectories, {n_turns:,} client turns")


@traces_group.command("build")
@example("trajbench traces build traces.jsonl.zst --out shards --tokenizer qwen3.6")
@click.argument("sources", nargs=-1, required=True, type=click.Path())
@FORMAT_OPTION
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Shard folder to create.")
@click.option("--name", default=None, help="Dataset name (shard file stem); default: the folder name.")
@click.option(
    "--repeats",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Passes over the dataset to materialise.",
)
@click.option(
    "--salt",
    type=LazyChoice(lambda: traces.SALT_MODES),
    default="mlperf",
    show_default=True,
    help="Cache-isolation salting (docs/salting.md); strong is research-only.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of --salt strong.")
@click.option(
    "--no-history-marker",
    is_flag=True,
    help="Send byte-identical reference prompts (no history marker, docs/history-marker.md).",
)
@click.option("--tokenizer", default=None, help="Fill token columns: NAME or NAME:PATH (see `trajbench tokenizers`).")
@profile_option(
    None,
    "Build for this model: count tokens with its tokenizer and chat-template kwargs (--tokenizer overrides the tokenizer).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out folder (atomically).")
@JOBS_OPTION
@PROGRESS_OPTION
@_inputs_help
def traces_build(
    sources: tuple[str, ...],
    fmt: str,
    out: str,
    name: str | None,
    repeats: int,
    salt: str,
    seed: int,
    no_history_marker: bool,
    tokenizer: str | None,
    profile: str | None,
    overwrite: bool,
    jobs: int,
    progress: str,
) -> None:
    """Build salted, deterministic per-turn Parquet shards from SOURCES."""
    opts = traces.BuildOptions(
        format=fmt,
        salt=salt,
        seed=seed,
        repeats=repeats,
        history_marker=not no_history_marker,
        name=name or Path(out).name,
    )
    prof = traces.get_profile(profile) if profile is not None else None
    counter = _load_counter(tokenizer or (prof.tokenizer if prof is not None else None), prof)
    with traces.Progress("build", mode=progress) as bar:
        result = traces.build_shards(sources, out, opts, counter=counter, overwrite=overwrite, progress=bar, jobs=jobs)
    m = result.manifest
    c = m.counts
    click.echo(
        f"built {out}: {c.trajectories:,} trajectories, {c.instances:,} instances, {c.client_turns:,} client turns in {len(m.shards)} shard(s)"
    )
    if (hm := m.history_marker) is not None:
        where = ", ".join(f"{k} {v:,}" for k, v in hm.positions.items()) or "none"
        how = (
            f"checked against the {hm.checked_with_template} chat template"
            if hm.checked_with_template
            else "no template given (--tokenizer checks it)"
        )
        click.echo(f"history marker: {hm.assistant_messages:,} replayed assistant messages; positions: {where}; {how}")
    click.echo(f"content hash {m.content_hash}")


def _load_counter(spec: str | None, profile: traces.Profile | None = None) -> Any:
    """The tokenizer `spec` names, with the profile's chat-template kwargs when one is given."""
    if spec is None:
        return None
    from traces.tokenizers import load_tokenizer

    kwargs = dict(profile.chat_template_kwargs) if profile is not None else None
    return load_tokenizer(spec, template_kwargs=kwargs)


@traces_group.command("verify")
@example("trajbench traces verify shards")
@SHARDS_ARGUMENT
@click.option(
    "--files-only",
    is_flag=True,
    help="Check the shard files' sha256 only (what `replay run` does at start), not the rows.",
)
def traces_verify(shards_dir: str, files_only: bool) -> None:
    """Check SHARDS_DIR against its manifest: every file's sha256 and the rows' content hash.

    Exits 1 naming the first file that differs."""
    v = traces.verify_shards(traces.Shards(shards_dir), content=not files_only, hold=False)
    what = "file sha256s" if files_only else f"file sha256s and content hash {v.content_hash}"
    click.echo(f"ok: {v.files} shard file(s), {v.bytes:,} bytes: {what} match the manifest ({v.seconds:.2f} s)")


@traces_group.command("show")
@example("trajbench traces show shards --trajectory sim_001 --turn 3")
@SHARDS_ARGUMENT
@click.option("--trajectory", "trajectory_id", required=True, help="Source conversation id.")
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Which pass over the dataset (1 = the first; later repeats are salted apart, docs/salting.md).",
)
@click.option(
    "--turn", required=True, type=int, help="The dataset's turn number of a client row (docs/dataset-format.md)."
)
@profile_option(
    None,
    "Model profile whose request parameters are used (default: the one the shards' tokenizer belongs to, else kimi-k3).",
)
@click.option("--model", default=None, help="Served model name, if not the profile's.")
def traces_show(
    shards_dir: str, trajectory_id: str, repeat: int, turn: int, profile: str | None, model: str | None
) -> None:
    """Print the exact JSON body replay will send for one turn."""
    if profile is None:
        prof, note = traces.shards_profile(traces.Shards(shards_dir))
        if note is not None:
            click.echo(f"Note: {note}", err=True)
    else:
        prof = traces.get_profile(profile)
    body = traces.turn_body(shards_dir, trajectory_id, repeat, turn, prof, model=model)
    click.echo(json.dumps(body, indent=2, ensure_ascii=False))


@traces_group.command("export")
@example("trajbench traces export shards --format openai-messages --out messages.jsonl")
@SHARDS_ARGUMENT
@click.option(
    "--format",
    "fmt",
    type=LazyChoice(lambda: sorted(traces.FORMATS)),
    default="mlperf-jsonl",
    show_default=True,
    help="Format to write: mlperf-jsonl, openai-messages or workflow (the others are read only).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Output file: *.jsonl or *.jsonl.zst (every format is written as JSON Lines).",
)
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Which pass over the dataset to write (1 = the first; later repeats are salted apart).",
)
def traces_export(shards_dir: str, fmt: str, out: str, repeat: int) -> None:
    """Write built shards back out as trace data in --format (docs/dataset-format.md, "Export").

    The output is complete or absent (written beside, then renamed). A format that cannot hold
    a field (generation parameters, extra fields, a tool list that changes mid-conversation;
    workflow: delays on assistant rows) writes without it and warns with a count per field;
    a rebuild from a lossless export gives the same content hash."""
    res = traces.export_shards(shards_dir, out, fmt=fmt, repeat=repeat)
    if res.dropped:
        click.echo(
            f"Warning: the {fmt} format cannot hold every field of these shards; dropped: {res.dropped_text()} "
            '(docs/dataset-format.md, "Export")',
            err=True,
        )
    unit = "rows" if fmt == "mlperf-jsonl" else "records"
    click.echo(f"wrote {res.records:,} {unit} ({res.conversations:,} conversations, {fmt}) to {out}")


@traces_group.command("synth")
@example("trajbench traces synth --out synthetic.jsonl.zst --scale 0.05")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Output file (.jsonl or .jsonl.zst).")
@click.option("--seed", default=0, show_default=True, help="Seed: same seed and scale give the same bytes.")
@click.option(
    "--scale",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Size relative to the official set (1 = 613 trajectories, 30,335 client turns).",
)
@PROGRESS_OPTION
def traces_synth(out: str, seed: int, scale: float, progress: str) -> None:
    """Write a deterministic synthetic look-alike of the official dataset (mlperf-jsonl)."""
    from traces.synth import synthesize

    with traces.Progress("synth", mode=progress) as bar:
        r = synthesize(out, seed=seed, scale=scale, progress=bar)
    click.echo(
        f"wrote {out}: {r.trajectories:,} trajectories ({r.coding:,} coding, {r.workflow:,} workflow), {r.client_turns:,} client turns, {r.assistant_turns:,} assistant turns, {r.rows:,} rows"
    )


def _sizes(value: str | None) -> tuple[int, ...]:
    """`16k,64k,1M` → sizes in units (`traces.parse_size`: k = 1,000, M = 1,000,000)."""
    if not value:
        return ()
    try:
        return tuple(traces.parse_size(part) for part in value.split(","))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--cache-sizes") from None


@traces_group.command("stats")
@example("trajbench traces stats shards --tokenizer qwen3.6 --out stats")
@SHARDS_ARGUMENT
@click.option(
    "--tokenizer",
    default=None,
    help="Count tokens with NAME or NAME:PATH (default: the shards' token columns, else characters).",
)
@click.option("--out", default=None, type=click.Path(file_okay=False), help="Folder for stats.json and the PNG plots.")
@click.option(
    "--block-size",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="KV-cache block size in units (prefix reuse is counted in whole blocks).",
)
@click.option(
    "--concurrency",
    "-c",
    default=32,
    show_default=True,
    type=click.IntRange(min=1),
    help="Users replaying closed loop in the LRU cache simulation.",
)
@click.option(
    "--cache-sizes",
    default=None,
    help="LRU cache sizes in units, comma-separated, k = 1,000 and M = 1,000,000 (64k, 2M); default: ten doublings up to 'holds everything'.",
)
@JOBS_OPTION
@PROGRESS_OPTION
def traces_stats(
    shards_dir: str,
    tokenizer: str | None,
    out: str | None,
    block_size: int,
    concurrency: int,
    cache_sizes: str | None,
    jobs: int,
    progress: str,
) -> None:
    """Lengths, context growth, delays and prefix reuse (ideal and LRU) of built shards."""
    from rich.console import Console

    from traces.analysis import StatsOptions, analyse, stats_tables

    opts = StatsOptions(block_size=block_size, concurrency=concurrency, cache_sizes=_sizes(cache_sizes))
    counter = _load_counter(tokenizer)
    with traces.Progress("stats", mode=progress) as bar:
        result = analyse(shards_dir, out, tokenizer=counter, options=opts, progress=bar, jobs=jobs)
    console = Console()
    for table in stats_tables(result.stats):
        console.print(table)
    for path in result.files:
        click.echo(f"wrote {path}")


@traces_group.command("card")
@example("trajbench traces card shards --out data_cards/my-dataset.md --tokenizer qwen3.6")
@SHARDS_ARGUMENT
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="The card to write, e.g. data_cards/NAME.md (plots go to img/ beside it).",
)
@click.option("--license", "license_", default="unknown", show_default=True, help="Licence of the dataset (SPDX id).")
@click.option("--version", "version", default="1", show_default=True, help="Dataset version.")
@click.option("--summary", default=None, help="Summary paragraph (default: generated from the counts).")
@click.option(
    "--build",
    "build",
    multiple=True,
    help="A command that rebuilds the shards, recorded in the card (repeatable, in order).",
)
@click.option("--tokenizer", default=None, help="Count tokens with NAME or NAME:PATH for the statistics.")
@click.option(
    "--block-size",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="KV-cache block size of the reuse statistics.",
)
@click.option(
    "--concurrency",
    "-c",
    default=32,
    show_default=True,
    type=click.IntRange(min=1),
    help="Users of the LRU cache simulation.",
)
@PROGRESS_OPTION
def traces_card(
    shards_dir: str,
    out: str,
    license_: str,
    version: str,
    summary: str | None,
    build: tuple[str, ...],
    tokenizer: str | None,
    block_size: int,
    concurrency: int,
    progress: str,
) -> None:
    """Write the data card of built shards: YAML front matter from the manifest, fixed sections, plots."""
    from traces.analysis import StatsOptions

    opts = StatsOptions(block_size=block_size, concurrency=concurrency)
    with traces.Progress("card", mode=progress) as bar:
        path = traces.write_card(
            shards_dir,
            out,
            version=version,
            license=license_,
            summary=summary,
            build=build,
            tokenizer=_load_counter(tokenizer),
            options=opts,
            progress=bar,
        )
    click.echo(f"wrote {path}")


@traces_group.command("publish")
@example("trajbench traces publish shards --profile qwen3.6-35b-a3b --out release/qwen3.6-v1")
@SHARDS_ARGUMENT
@profile_option(None, "The model profile the dataset is published for.", required=True)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Release folder to create (must not exist; written in a temporary folder, then renamed).",
)
@REGISTRY_OPTION
@click.option("--license", "license_", default="unknown", show_default=True, help="Licence of the dataset (SPDX id).")
@click.option("--version", "version", default="1", show_default=True, help="Dataset version.")
@click.option("--summary", default=None, help="Summary paragraph of the card (default: generated from the counts).")
@click.option(
    "--build",
    "build",
    multiple=True,
    help="A command that rebuilds the shards, recorded in the card (repeatable, in order).",
)
@click.option(
    "--tokenizer", default=None, help="Count tokens with NAME or NAME:PATH for the card's statistics (default: none)."
)
@PROGRESS_OPTION
def traces_publish(
    shards_dir: str,
    profile: str,
    out: str,
    registry: str | None,
    license_: str,
    version: str,
    summary: str | None,
    build: tuple[str, ...],
    tokenizer: str | None,
    progress: str,
) -> None:
    """Write a release folder of SHARDS for a profile (docs/maintainers.md): the shards and manifest,
    the data card as README.md (Hugging Face `configs:`, so `datasets.load_dataset(DIR)` opens it),
    the profile, and registry.json, the dataset's official-hash entry (added to --registry for a
    user profile; a built-in's goes into eval/data/official.json by a reviewed change)."""
    prof = traces.get_profile(profile)
    with traces.Progress("publish", mode=progress) as bar:
        rel = traces.publish(
            shards_dir,
            out,
            prof,
            registry=registry,
            version=version,
            license=license_,
            summary=summary,
            build=build,
            tokenizer=_load_counter(tokenizer, prof),
            progress=bar,
        )
    click.echo(f"published {rel.folder}: {rel.name} for profile {rel.profile}, {len(rel.files)} files")
    click.echo(f"content hash {rel.content_hash}")
    if rel.registry is not None:
        click.echo(
            f"registered in {rel.registry}; `trajbench eval check --registry {rel.registry}` checks runs against it"
        )
    elif prof.built_in:
        click.echo(f"official only once {rel.folder}/registry.json's entry is in eval/data/official.json")
    else:
        click.echo(f"not registered (no --registry or ${traces.REGISTRY_ENV}): {rel.folder}/registry.json is the entry")


# ---------------------------------------------------------------- replay
@traces_group.command("check-template")
@example(
    "trajbench traces check-template shards --endpoint http://localhost:8000 --sample 50 --json parity.json",
    needs="an engine that tokenises at that URL: vLLM, SGLang or llama.cpp's llama-server, not the simulator",
)
@SHARDS_ARGUMENT
@click.option("--endpoint", required=True, help="Base URL of the engine (vLLM, SGLang or llama.cpp's llama-server).")
@click.option(
    "--api",
    type=click.Choice(["auto", "vllm", "sglang", "llamacpp"]),
    default="auto",
    show_default=True,
    help="The engine's tokenisation API; auto tells it from the routes the server answers.",
)
@click.option("--sample", default=20, show_default=True, type=click.IntRange(min=1), help="Turns to compare.")
@click.option("--seed", default=0, show_default=True, help="Seed of the sample: the same seed, the same turns.")
@click.option(
    "--tokenizer",
    default=None,
    help="Client-side tokenizer and template, NAME[:PATH] (default: the shards' own, when it needs no path), "
    "e.g. gguf:model.gguf for the template a llama.cpp server uses.",
)
@profile_option(None, "Model profile: chat-template kwargs and served model name (default: the shards').")
@click.option(
    "--model",
    default=None,
    help="Served model name (default: the profile's; if the endpoint does not serve it and serves exactly one model, "
    "that one, docs/engines.md).",
)
@click.option(
    "--json", "json_out", default=None, type=click.Path(dir_okay=False), help="Also write the report as JSON."
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 unless every sampled turn's ids are identical and the engine keeps every sampled history marker.",
)
@click.option(
    "--timeout",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds per request.",
)
def traces_check_template(
    shards_dir: str,
    endpoint: str,
    api: str,
    sample: int,
    seed: int,
    tokenizer: str | None,
    profile: str | None,
    model: str | None,
    json_out: str | None,
    strict: bool,
    timeout: float,
) -> None:
    """Compare the client-side chat-template render of sampled prompts with the engine's own
    tokenisation of the same messages (docs/templates.md).

    Per turn: both token counts, whether the ids are identical, and the first position where they
    differ with the text around it on both sides; then the share of identical turns. Per turn with
    a history marker, whether the engine's tokens change with it (the prompt is tokenised once more
    without it). Exit 0 whatever the parity unless --strict."""
    shards = traces.Shards(shards_dir)
    prof = traces.get_profile(profile) if profile else traces.shards_profile(shards, quiet_without_tokenizer=True)[0]
    spec = tokenizer or replay.default_template_tokenizer(shards, prof)
    report = replay.check_template(
        shards_dir,
        endpoint,
        _load_counter(spec, prof),
        prof,
        sample=sample,
        seed=seed,
        api=api,
        model=model,
        timeout=timeout,
    )
    for line in replay.render_parity(report):
        click.echo(line)
    if json_out:
        click.echo(f"wrote {report.write_to(json_out)}")
    problems = []
    if report.identical < len(report.turns):
        problems.append(
            f"template parity {100 * report.parity:.1f} % < 100 %: the engine tokenises "
            f"{len(report.turns) - report.identical} of {len(report.turns)} sampled prompts differently; "
            "see the first divergence of each above (docs/templates.md)"
        )
    if report.markers_erased:
        problems.append(
            f"the engine erases the history marker in {report.markers_erased} of {report.markers_checked} sampled "
            "replayed assistant messages: its tokens are the same with and without it, so it would not stop reuse "
            "of generated tokens; rebuild the shards with the tokenizer of the served model (docs/history-marker.md)"
        )
    if strict and problems:
        raise replay.ReplayError("(--strict) " + "; and ".join(problems))


@cli.group("replay")
def replay_group() -> None:
    """Replay shards closed-loop against an endpoint; sweep concurrency; calibrate the harness."""


CONFIG_HELP = (
    "Read options from a YAML or JSON file: keys are the option names with underscores "
    "(turn_timeout, header, sim_args; shards for SHARDS_DIR, a relative path read from the current "
    "folder); the command line wins over the file. "
    "A finished run's run.json replays that run (refused if its shards changed since). "
    "Never put an API key in it: name its variable with api_key_env."
)


def settled_options(options: tuple[traces.Option, ...]) -> Callable[[Callable[[traces.Values], None]], Any]:
    """A command of declared options and `--config FILE`: click parses the command line, the
    library settles every option (`replay.settle`: the command line, else the file, else the
    default) and the command gets the values."""

    def add(f: Callable[[traces.Values], None]) -> Any:
        @functools.wraps(f)
        def command(config: str | None, **given: Any) -> None:
            ctx = click.get_current_context()
            named = {k: v for k, v in given.items() if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE}
            try:
                f(replay.settle(options, named, config, command=ctx.command_path))
            except replay.UsageProblem as exc:
                if exc.option is not None:
                    raise click.BadParameter(str(exc), ctx, param_hint=exc.option) from None
                raise click.UsageError(str(exc), ctx) from None

        wrapped: Any = command
        for option in reversed(options):
            wrapped = declared_option(option)(wrapped)
        return click.option("--config", type=click.Path(exists=True, dir_okay=False), help=CONFIG_HELP)(wrapped)

    return add


def _run_config(values: traces.Values, **fixed: Any) -> replay.RunConfig:
    """The run's configuration, after the notes its options left (a profile chosen for the
    shards, a run.json replayed over other rows)."""
    config = replay.run_config(values, **fixed)
    for note in values.notes:
        click.echo(note, err=True)
    return config


def _say_target(config: replay.RunConfig) -> None:
    """One line saying what a run without --endpoint measures (never a real server)."""
    if config.endpoint is None:
        from replay.sim import SimConfig, describe

        click.echo(
            f"target: embedded simulator — {describe(config.sim or SimConfig())}; "
            "pass --endpoint to measure a server, --sim-args to change it"
        )


GATES_OPTION = declared_option(evaluation.GATES_OPTION)


_RUN_EXIT_CODES = """
    \b
    Before the first turn the endpoint is checked (GET /v1/models, then one tiny streamed request
    with the run's model and the profile's parameters); a failure says what to fix and nothing
    is replayed. --skip-preflight starts without it.

    \b
    Exit codes:
      0    finished, and at least one turn succeeded (in every point, for a sweep); the accuracy
           gates are reported, not enforced
      1    Error: something stopped the run or kept it from starting, and the message says what
           to fix (bad options or shards, the endpoint failed the preflight check, the open-file
           limit is too low for --concurrency, a crash)
      2    a usage error (unknown option, bad value)
      3    every issued turn failed (of the run, or of a sweep's point, where the sweep stops):
           nothing was measured, the records say why
      130  interrupted by Ctrl-C (SIGINT), 143 by SIGTERM (128 + the signal's number, as every
           command exits): a run keeps the turns that finished; a sweep stops at that point and
           resumes there
"""


def _exit_codes(f: F) -> F:
    f.__doc__ = (f.__doc__ or "").rstrip() + "\n" + _RUN_EXIT_CODES
    return f


@replay_group.command("run")
@example("trajbench replay run shards -c 8 --endpoint http://localhost:8000 --out runs/c8", needs=NEEDS_SERVER)
@settled_options(jobs.SCORED_RUN_OPTIONS)
@_exit_codes
def replay_run(values: traces.Values) -> None:
    """Replay SHARDS_DIR closed-loop and write a run folder (records, summary, report), then
    score its inline accuracy and OSL gate.

    Without --endpoint the embedded simulator serves the run: oracle answers from the shards and
    its step model 64x faster than the default (the run says so; --sim-args changes any of it)."""
    config = _run_config(values)
    _say_target(config)
    result = replay.run_loop(jobs.scored_run(config, values["gates"]))
    click.echo((result.run_dir / replay.REPORT_FILE).read_text("utf-8"), nl=False)
    for line in result.verdict.lines() if result.verdict is not None else []:
        click.echo(line)
    click.echo(f"run folder: {result.run_dir}")
    if result.outcome.all_failed:  # there was nothing to score
        raise result.outcome.failure(result.run_dir)
    if result.outcome.interrupted:
        raise replay.Interrupted(
            "issuing stopped early; the results cover the turns that finished", result.signal_exit or 130
        )


@replay_group.command("sweep")
@example(
    "trajbench replay sweep shards --concurrency 1,4,16 --out sweep --endpoint http://localhost:8000",
    needs=NEEDS_SERVER,
)
@settled_options(jobs.SCORED_SWEEP_OPTIONS)
@_exit_codes
def replay_sweep(values: traces.Values) -> None:
    """One full replay per concurrency (each scored for accuracy), resumable; then `trajbench report`.

    Ctrl-C or SIGTERM drains the running point, marks it interrupted in sweep.json and stops the
    sweep (exit 130 or 143); a point where every turn failed stops it too (exit 3). The same
    command resumes the sweep, rerunning that point. With --add, the sweep in --out grows by the
    concurrencies it lacks (results are submitted incrementally: a baseline, then more points).
    Without --endpoint every point runs against the embedded simulator, as in `replay run`."""
    levels = replay.sweep_levels(values)
    config = _run_config(values, concurrency=1, out=None, overwrite=True)  # a sweep manages its own point folders
    _say_target(config)
    if values["regions"] and values["max_concurrency"] > 1:
        click.echo(f"regions (docs/submitting.md): {replay.describe_regions(levels, values['max_concurrency'])}")
    sweep = jobs.scored_sweep(config, levels, values["out"], echo=click.echo, gates=values["gates"], add=values["add"])
    folder = replay.run_loop(sweep)
    click.echo(f"sweep folder: {folder}  (next: trajbench report {folder} --out REPORT_DIR)")


@replay_group.command("calibrate")
@example("trajbench replay calibrate --shards shards -c 16 --workers 2")
@click.option(
    "--concurrency",
    "-c",
    default=128,
    show_default=True,
    type=click.IntRange(min=1),
    help="Streams in flight at once (split over the workers).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Measure our client with 1..W worker processes (scaling).",
)
@click.option(
    "--turns",
    default=2048,
    show_default=True,
    type=click.IntRange(min=1),
    help="Turns per saturated run (the paced run uses half); with --shards, see --trajectories.",
)
@click.option(
    "--tokens-per-turn",
    default=256,
    show_default=True,
    type=click.IntRange(min=1),
    help="Mean streamed content chunks per turn (the server spreads lengths ±50 %).",
)
@click.option(
    "--paced",
    default="50,5,64",
    show_default=True,
    metavar="TTFT_MS,ITL_MS,TOKENS",
    help="The paced phase's server: first chunk after TTFT_MS, then one every ITL_MS, TOKENS a turn.",
)
@click.option(
    "--pin/--no-pin",
    default=True,
    show_default=True,
    help="In the paced phase, run the server on one CPU and the clients on the others (Linux, 2+ CPUs).",
)
@click.option(
    "--compare",
    multiple=True,
    type=click.Choice(["agentic-bench", "floor", "httpx-default", "none", "trajbench-asyncio", "trajbench-uvloop"]),
    help="Also run this client side by side (repeatable). `floor`: a bare client on the same loop that "
    "sends the same bodies and only stamps its reads; ours minus it is the harness's own cost (docs/metrics.md).",
)
@click.option(
    "--compare-python",
    default=None,
    type=click.Path(dir_okay=False),
    help="Interpreter with agentic-bench installed (default: this one).",
)
@click.option(
    "--loop",
    default=None,
    type=click.Choice(["asyncio", "uvloop"]),
    help="Event loop of our client processes (default: the one `replay run` uses, uvloop where installed).",
)
@click.option(
    "--shards",
    "shards",
    default=None,
    type=click.Path(file_okay=False),
    help="Replay these shards' own prompts (sizes, tools, turn structure) through `trajbench replay run` "
    "in both phases: CPU of the streaming phase and of the whole process (start-up to scoring).",
)
@click.option(
    "--trajectories",
    default=None,
    type=click.IntRange(min=1),
    help="With --shards: trajectory instances per run (default: two per slot).",
)
@click.option(
    "--phase",
    "phases",
    multiple=True,
    type=click.Choice(["saturated", "paced"]),
    help="Run only this phase (repeatable; default: both).",
)
@click.option(
    "--json", "json_out", default=None, type=click.Path(dir_okay=False), help="Also write the rows as JSON here."
)
def replay_calibrate(
    concurrency: int,
    workers: int,
    turns: int,
    tokens_per_turn: int,
    paced: str,
    pin: bool,
    compare: tuple[str, ...],
    compare_python: str | None,
    loop: str | None,
    shards: str | None,
    trajectories: int | None,
    phases: tuple[str, ...],
    json_out: str | None,
) -> None:
    """Measure the harness's own limits against a loopback server streaming flat out, then paced like an engine.

    With --shards the prompts are the dataset's own and our client is `trajbench replay run` itself,
    so its figures include start-up, shard verification, the preflight and scoring (docs/metrics.md)."""
    from replay.calibrate import Paced, calibrate, format_rows, layout_line, rows_to_json

    try:
        ttft_ms, itl_ms, paced_tokens = paced.split(",")
        pacing = Paced(float(ttft_ms), float(itl_ms), int(paced_tokens))
    except ValueError:
        raise click.BadParameter(f"{paced!r}: give TTFT_MS,ITL_MS,TOKENS, e.g. 50,5,64", param_hint="--paced") from None
    rows = calibrate(
        concurrency=concurrency,
        workers=workers,
        turns=turns,
        tokens=tokens_per_turn,
        paced=pacing,
        pin=pin,
        compare=compare,
        compare_python=compare_python,
        loop=loop,
        shards=shards,
        trajectories=trajectories,
        phases=phases or ("saturated", "paced"),
        echo=lambda s: click.echo(s, err=True),
    )
    for line in format_rows(rows):
        click.echo(line)
    click.echo(layout_line(pin, pacing))
    if json_out:
        Path(json_out).write_text(rows_to_json(rows) + "\n", encoding="utf-8")


def _divisions() -> tuple[str, ...]:
    from eval.submission import DIVISIONS

    return DIVISIONS


def _swebench_runtimes() -> Iterable[str]:
    from eval.swebench import RUNTIMES  # light: imports none of the extra

    return RUNTIMES


# ---------------------------------------------------------------- eval
@cli.group("eval")
def eval_group() -> None:
    """Accuracy gates (inline, OSL, SWE-bench) and the compliance check of a submission."""


SHARDS_OVERRIDE = click.option(
    "--shards",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="Shard folder the run replayed, if not the one named in run.json.",
)


@eval_group.command("inline")
@example("trajbench eval inline runs/c8 --gates dataset")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@SHARDS_OVERRIDE
@click.option(
    "--rules",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="Scoring rules JSON (default: the official eval/data/scoring.json).",
)
@GATES_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print scores.json's summary (without per_turn) as JSON.")
@PROFILES_OPTION
@PROGRESS_OPTION
def eval_inline(run_dir: str, shards: str | None, rules: str | None, gates: str, as_json: bool, progress: str) -> None:
    """Inline accuracy of RUN_DIR (docs/accuracy.md) from its records; writes RUN_DIR/scores.json.

    Exits 1 when the score is below the threshold (of the profile, or derived from the dataset
    with --gates dataset; never with --gates off); warns when RUN_DIR is a partial run
    (interrupted, crashed, or fewer turns than planned)."""
    _warn_partial(run_dir)
    with traces.Progress("inline", mode=progress) as bar:
        res = evaluation.score_run(run_dir, shards=shards, rules=rules, gates=gates, progress=bar)
    if as_json:
        click.echo(json.dumps({k: v for k, v in res.to_json().items() if k != "per_turn"}, indent=2))
    else:
        click.echo("\n".join(evaluation.inline_lines(res)))
        click.echo(f"wrote {Path(run_dir) / evaluation.SCORES_FILE}")
    if res.passed is False:
        raise evaluation.GateFailed("inline accuracy below the threshold")


def _warn_partial(run_dir: str) -> None:
    note = evaluation.partial_run(run_dir)
    if note:
        click.echo(f"Warning: {note}", err=True)


@eval_group.command("osl")
@example("trajbench eval osl runs/c8 --tokenizer qwen3.6")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@profile_option(None, "Model profile whose band applies (default: the run's).")
@SHARDS_OVERRIDE
@click.option(
    "--tokenizer",
    default=None,
    help="Count output tokens as the reference does with this tokenizer (NAME or NAME:PATH); default: the run's counts, else the profile's tokenizer when it loads offline, else server usage.",
)
@GATES_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@PROGRESS_OPTION
def eval_osl(
    run_dir: str,
    profile: str | None,
    shards: str | None,
    tokenizer: str | None,
    gates: str,
    as_json: bool,
    progress: str,
) -> None:
    """Mean output tokens per turn of RUN_DIR against the profile's band; writes osl.json.

    Output tokens are counted as the reference counts them (the chat template's count of each
    answer) when a tokenizer is available, else from the server's usage; both are recorded.
    Exits 1 when the window mean is outside the band (the profile's, or derived from the
    dataset with --gates dataset; never with --gates off)."""
    _warn_partial(run_dir)
    with traces.Progress("osl", mode=progress) as bar:
        res = evaluation.osl_gate(
            run_dir, profile=profile, shards=shards, tokenizer=tokenizer, gates=gates, progress=bar
        )
    click.echo(json.dumps(res.to_json(), indent=2) if as_json else "\n".join(evaluation.osl_lines(res)))
    if res.passed is False:
        raise evaluation.GateFailed("mean output length outside the band")


@eval_group.command("check")
@example(
    "trajbench eval check sweep/c0001 sweep/c0004 sweep/c0016 --swebench swe1 --swebench swe2 --swebench swe3 "
    "--swebench swe4",
    needs="the four SWE-bench region runs of `trajbench eval swebench` (Docker); docs/submitting.md",
)
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--swebench",
    "swebench",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A SWE-bench result folder (repeatable; 4 region runs needed).",
)
@click.option(
    "--expected-hash",
    default=None,
    help="The dataset's manifest content hash (default: eval/data/official.json for a built-in profile, "
    "the --registry file for a user one).",
)
@profile_option(None, "The submission's model profile (default: the runs').")
@REGISTRY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def eval_check(
    run_dirs: tuple[str, ...],
    swebench: tuple[str, ...],
    expected_hash: str | None,
    profile: str | None,
    registry: str | None,
    as_json: bool,
) -> None:
    """Compliance of a submission (docs/compliance.md): every check of every run folder RUN_DIRS.

    A run of a user profile fails the official-profile check (docs/maintainers.md); its dataset
    is checked against the hash `traces publish` put into the user registry."""
    checks = evaluation.check_submission(
        run_dirs, swebench=swebench, expected_hash=expected_hash, profile=profile, registry=registry
    )
    if as_json:
        click.echo(json.dumps(evaluation.compliance_json(checks), indent=2))
    else:
        for line in evaluation.compliance_lines(checks):
            click.echo(line)
    failed = sum(not c.passed for c in checks)
    if failed:
        raise evaluation.EvalError(f"{failed} of {len(checks)} compliance checks failed")


@eval_group.command("swebench")
@example(
    "trajbench eval swebench --dataset verified.parquet --endpoint http://localhost:8000 --profile kimi-k3 --out swe1",
    needs="the extra trajbench[swebench], Docker, a local copy of SWE-bench Verified and the model at that URL",
)
@click.option(
    "--dataset",
    required=True,
    type=click.Path(),
    help="Local Parquet/JSONL copy of the SWE-bench Verified test split (nothing is downloaded).",
)
@click.option(
    "--endpoint", required=True, help="OpenAI-compatible base URL, e.g. http://host:8000 (with or without /v1)."
)
@profile_option(None, "Model profile: sampling parameters, agent template, threshold.", required=True)
@click.option(
    "--instances",
    default=200,
    show_default=True,
    type=click.IntRange(min=1),
    help="The first N instances, in dataset order.",
)
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(min=1), help="Instances run (and graded) at once."
)
@click.option(
    "--runtime",
    type=LazyChoice(lambda: sorted(_swebench_runtimes())),
    default="docker",
    show_default=True,
    help="docker: per-instance containers (official). local: NOT isolated, only when given explicitly.",
)
@click.option(
    "--repos",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="--runtime local: folder of task repositories (DIR/<instance_id> or DIR/<owner>__<name>).",
)
@click.option(
    "--out",
    default="swebench-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Run folder (may be a replay run folder: scores.json is merged).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the run in --out: skip graded instances, grade finished ones, rerun the rest.",
)
@click.option("--model", default=None, help="Served model name, if not the profile's.")
@click.option(
    "--api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    help="Environment variable holding the endpoint's API key (never written anywhere).",
)
@click.option(
    "--concurrency",
    default=None,
    type=click.IntRange(min=1),
    help="The replay concurrency (Pareto point / region) this run accompanies; recorded in the summary.",
)
@click.option(
    "--step-limit",
    default=None,
    type=click.IntRange(min=1),
    help="Agent step limit (default: mini-swe-agent's SWE-bench config).",
)
@click.option(
    "--test-timeout",
    default=1800,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds for one instance's tests.",
)
def eval_swebench(
    dataset: str,
    endpoint: str,
    profile: str,
    instances: int,
    workers: int,
    runtime: str,
    repos: str | None,
    out: str,
    resume: bool,
    model: str | None,
    api_key_env: str,
    concurrency: int | None,
    step_limit: int | None,
    test_timeout: int,
) -> None:
    """Standalone SWE-bench Verified run (docs/accuracy.md): mini-swe-agent against ENDPOINT, graded by
    the swebench harness. Needs `pip install 'trajbench[swebench]'`."""
    from eval.swebench import RichReporter, SwebenchOptions, run_swebench

    opts = SwebenchOptions(
        dataset=dataset,
        endpoint=endpoint,
        profile=profile,
        out=out,
        instances=instances,
        workers=workers,
        runtime=runtime,
        repos=repos,
        resume=resume,
        model=model,
        api_key_env=api_key_env,
        concurrency=concurrency,
        step_limit=step_limit,
        test_timeout=test_timeout,
    )
    with RichReporter(disable=not sys.stderr.isatty()) as reporter:
        s = run_swebench(opts, echo=click.echo, reporter=reporter)
    click.echo(
        f"SWE-bench {s.profile} ({s.runtime}): {s.resolved}/{s.instances} resolved = {100 * s.score:.2f}%, {s.unresolved} unresolved, {s.incomplete} incomplete"
    )
    if s.incomplete:
        todo = s.todo()
        click.echo(
            f"incomplete (not counted as resolved; see <id>/agent.log, rerun with --resume): {', '.join(todo[:20])}{' …' if len(todo) > 20 else ''}"
        )
    click.echo(f"wrote {s.path(out)} and the swebench line of {Path(out) / evaluation.SCORES_FILE}")


@eval_group.command("swebench-mean")
@example(
    "trajbench eval swebench-mean swe1 swe2 swe3 swe4", needs="four run folders of `trajbench eval swebench` (Docker)"
)
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@PROFILES_OPTION
def eval_swebench_mean(run_dirs: tuple[str, ...]) -> None:
    """Mean SWE-bench score of the region runs RUN_DIRS against the profile's threshold.

    Exits 1 when the mean is below the threshold."""
    from eval.swebench import swebench_mean

    res = swebench_mean(list(run_dirs))
    for d, score, resolved, n, incomplete in res.runs:
        click.echo(f"{d}: {resolved}/{n} = {100 * score:.2f}%" + (f" ({incomplete} incomplete)" if incomplete else ""))
    thr = "none" if res.threshold is None else f"{100 * res.threshold:.2f}%"
    click.echo(
        f"mean {100 * res.mean:.2f}% over {len(res.runs)} run(s); {res.profile} threshold {thr}: {'pass' if res.passed else 'FAIL'}"
    )
    for note in res.notes:
        click.echo(f"note: {note}")
    if not res.passed:
        raise evaluation.GateFailed("mean SWE-bench score below the threshold")


# ---------------------------------------------------------------- tokenizers
@cli.command("tokenizers")
@example("trajbench tokenizers")
def tokenizers_cmd() -> None:
    """List the tokenizers `--tokenizer NAME[:PATH]` accepts (nothing is downloaded)."""
    from traces.tokenizers import TOKENIZERS

    for kind in TOKENIZERS.values():
        spec = kind.name if kind.path is None else f"{kind.name}:{kind.path}"
        click.echo(f"{spec:<16} {kind.description}")


# ---------------------------------------------------------------- docs
@cli.command("docs")
@example("trajbench docs submitting")
@click.argument("page", required=False)
@click.option("--path", "show_path", is_flag=True, help="Print where the page's file is instead of its text.")
@click.option("--open", "open_it", is_flag=True, help="Open the page with the system's viewer for Markdown files.")
def docs_cmd(page: str | None, show_path: bool, open_it: bool) -> None:
    """Read the documentation pages that messages and --help cite (docs/PAGE.md), from the
    installed package: without PAGE, list them; with PAGE, print it (through a pager on a
    terminal). Start with `trajbench docs submitting`: from a served model to a reviewed
    submission."""
    if page is None:
        for p in traces.pages():
            click.echo(f"{p.name:<16} {p.title}")
        click.echo("\n`trajbench docs PAGE` prints one; docs/submitting.md is the submitter's path, step by step")
        return
    found = traces.page(page)
    if show_path or open_it:
        where = str(found.file)
        if open_it:
            click.launch(where)
        click.echo(where)
        return
    text = found.file.read_text("utf-8")
    if sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


# ---------------------------------------------------------------- profiles
@cli.group("profiles", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the profiles as JSON (same as `profiles list --json`).")
@PROFILES_OPTION
@click.pass_context
def profiles_group(ctx: click.Context, as_json: bool) -> None:
    """List the model profiles (bare) or derive a new one's thresholds from reference runs.

    User profiles (--profiles FILE, $TRAJBENCH_PROFILES) are listed beside the built-ins with the
    file they came from (docs/maintainers.md)."""
    if ctx.invoked_subcommand is None:
        _list_profiles(as_json)


@profiles_group.command("list")
@example("trajbench profiles list --json")
@click.option("--json", "as_json", is_flag=True, help="Print the profiles as JSON.")
@PROFILES_OPTION
def profiles_list(as_json: bool) -> None:
    """List the model profiles: source, served name, tokenizer, sampling parameters, thresholds."""
    _list_profiles(as_json)


def _list_profiles(as_json: bool) -> None:
    profs = traces.profiles()
    if as_json:
        click.echo(
            json.dumps(
                {
                    name: {**p.content(), "source": p.source, "content_hash": p.content_hash()}
                    for name, p in profs.items()
                },
                indent=2,
            )
        )
        return
    for line in traces.profile_lines(profs.values()):
        click.echo(line)


@profiles_group.command("derive")
@example(
    "trajbench profiles derive runs/ref1 runs/ref2 --name my-model --out my-model.yaml",
    needs="official-shaped runs of the reference model on a real server; docs/maintainers.md",
)
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--name", required=True, help="The new profile's name (not a built-in's or a loaded profile's).")
@click.option(
    "--out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Profile file to write (.yaml, .yml or .json); default: print it.",
)
@click.option("--base", default=None, help="Profile to copy the other fields from (default: the runs' own).")
@click.option("--description", default=None, help="The new profile's description.")
@click.option(
    "--osl-tolerance",
    default=evaluation.DEFAULT_OSL_TOLERANCE,
    show_default=True,
    type=float,
    help="OSL band half-width as a fraction of the reference mean output tokens per turn (0.1 = ± 10 %), "
    "the unit the profile file records it in.",
)
@click.option(
    "--inline-fraction",
    default=evaluation.DEFAULT_INLINE_FRACTION,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="Inline threshold as a fraction of the reference inline score.",
)
@click.option(
    "--swebench",
    "swebench",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A reference standalone SWE-bench result folder (repeatable); without one, no SWE-bench threshold.",
)
@click.option(
    "--swebench-fraction",
    default=evaluation.DEFAULT_SWEBENCH_FRACTION,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True),
    help="SWE-bench threshold as a fraction of the reference SWE-bench mean.",
)
@click.option(
    "--allow-unofficial",
    is_flag=True,
    help="Derive from runs that are not official-shaped (simulated, salt, delays, partial; recorded in the profile).",
)
@PROFILES_OPTION
def profiles_derive(
    run_dirs: tuple[str, ...],
    name: str,
    out: str | None,
    base: str | None,
    description: str | None,
    osl_tolerance: float,
    inline_fraction: float,
    swebench: tuple[str, ...],
    swebench_fraction: float,
    allow_unofficial: bool,
) -> None:
    """A new profile whose gates come from the reference model's own runs RUN_DIRS: OSL band =
    reference mean output tokens per turn × (1 ± --osl-tolerance), inline threshold =
    --inline-fraction × the reference inline score, SWE-bench threshold from --swebench runs
    (docs/maintainers.md).

    The runs must be official-shaped and measured on a real server: a run against trajbench's
    simulator (embedded, or `serve-sim`) is refused, as any other unofficial run, unless
    --allow-unofficial is given."""
    derived = evaluation.derive_profile(
        run_dirs,
        name,
        base=base,
        description=description,
        osl_tolerance=osl_tolerance,
        inline_fraction=inline_fraction,
        swebench=swebench,
        swebench_fraction=swebench_fraction,
        allow_unofficial=allow_unofficial,
    )
    for line in derived.unofficial:
        click.echo(f"Warning: not official-shaped: {line}", err=True)
    if out is None:
        click.echo(traces.profile_text([derived.profile]), nl=False)
        return
    path = traces.write_profile_file(out, [derived.profile])
    t = derived.profile.thresholds
    click.echo(
        f"wrote {path}: profile {name}, OSL {t.osl_min:g}-{t.osl_max:g}, inline {t.inline}, SWE-bench {t.swebench}"
    )
    click.echo(f"use it with --profiles {path} --profile {name}")


# ---------------------------------------------------------------- report
def _label_dirs(dirs: tuple[str, ...], labels: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(system, folder) pairs: every --label NAME=DIR[,DIR…] folder under its name, then every
    positional folder no --label names, under its folder name."""
    out: list[tuple[str, Path]] = []
    named: set[Path] = set()
    for item in labels:
        name, sep, folders = item.partition("=")
        parts = [f.strip() for f in folders.split(",")]
        if not sep or not name or not all(parts):
            raise click.BadParameter(
                f"{item!r}: expected NAME=DIR or NAME=DIR,DIR,… (the folders of one system)", param_hint="--label"
            )
        for folder in parts:
            if not Path(folder).is_dir():
                raise click.BadParameter(
                    f"{item!r}: {folder} is not a folder; give run or sweep folders", param_hint="--label"
                )
            out.append((name, Path(folder)))
            named.add(Path(folder).resolve())
    return [(Path(d).resolve().name, Path(d)) for d in dirs if Path(d).resolve() not in named] + out


@cli.command("report")
@example("trajbench report --label mysystem=sweep,runs/c8 --out report")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out", required=True, type=click.Path(file_okay=False), help="Folder for report.html, PNGs and points.csv/json."
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="NAME=DIR[,DIR…]",
    help="Name a system and its run or sweep folders (repeatable); of several runs at one concurrency the latest "
    "(run.json's started_at) is the point.",
)
@click.option(
    "--cost-per-hour",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="System cost in $/h: adds tok/s per dollar-hour.",
)
@click.option(
    "--power-watts",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="System power in W: adds tok/s per watt.",
)
def report(
    dirs: tuple[str, ...], out: str, labels: tuple[str, ...], cost_per_hour: float | None, power_watts: float | None
) -> None:
    """Pareto step curve and comparison report from run or sweep folders DIRS.

    One system may be built up over time from several folders (--label sys=baseline,more):
    its point at each concurrency is the latest run, and folders of another dataset or model
    profile are refused. Points judged by research gates (--gates dataset or off) draw their own
    frontier, labelled as not an official result."""
    inputs = _label_dirs(dirs, labels)
    if not inputs:
        raise click.UsageError("give at least one run or sweep folder")
    page = jobs.build_report(inputs, Path(out), cost_per_hour=cost_per_hour, power_watts=power_watts)
    click.echo(f"report: {page}")


# ---------------------------------------------------------------- submit, review
@cli.command("submit")
@example(
    "trajbench submit sweep/ --out submission --submitter Acme --division closed --system-file 8xH100.yaml "
    "--swebench swe1 --swebench swe2 --swebench swe3 --swebench swe4",
    needs="points that pass the official gates on a real server, the system description (docs/submission.md) and "
    "the four SWE-bench runs",
)
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder of the submission tree.")
@click.option("--submitter", required=True, help="The submitting organisation (a folder name of the tree).")
@click.option("--division", required=True, type=LazyChoice(_divisions), help="MLPerf division.")
@click.option(
    "--system-file",
    required=True,
    type=click.Path(dir_okay=False),
    help="The system description (YAML or JSON): the MLPerf system fields, `measurements` and `trajbench` "
    "(accelerators, price, power); see docs/submission.md.",
)
@click.option("--system", default=None, help="The system's folder name (default: the system file's name).")
@click.option("--benchmark", default=None, help="The benchmark's folder name (default: the runs' profile).")
@click.option(
    "--swebench",
    "swebench",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A SWE-bench result folder (repeatable; 4 region runs), copied into the tree.",
)
@click.option("--date", "submission_date", default=None, help="Submission date YYYY-MM-DD (default: today, UTC).")
@click.option("--overwrite", is_flag=True, help="Replace --out when it is a tree `trajbench submit` wrote.")
@PROFILES_OPTION
def submit_cmd(
    dirs: tuple[str, ...],
    out: str,
    submitter: str,
    division: str,
    system_file: str,
    system: str | None,
    benchmark: str | None,
    swebench: tuple[str, ...],
    submission_date: str | None,
    overwrite: bool,
) -> None:
    """The MLPerf submission tree of a system's Pareto points, from sweep or run folders DIRS.

    Points that are complete and judged (scores.json and osl.json, both gates passing) make the
    frontier; each becomes a scenario folder with the reference's files where the MLPerf checker
    reads them and where publish_submission.py puts them, plus the run folder itself. The tree is
    self-checked before it is written (docs/submission.md); verify it with `trajbench review`."""
    res = evaluation.submit(
        dirs,
        out,
        submitter=submitter,
        division=division,
        system_file=system_file,
        system=system,
        benchmark=benchmark,
        swebench=swebench,
        submission_date=submission_date,
        overwrite=overwrite,
    )
    m = res.manifest
    for p in m.points:
        h = p.headline
        click.echo(
            f"{p.path}: c={p.concurrency} {h.output_tokens_per_s:.1f} tok/s, {h.per_user_tokens_per_s:.1f} tok/s "
            f"per user (from {p.source})"
        )
    for e in m.excluded:
        click.echo(f"left out {e.source} (c={e.concurrency}): {e.reason}")
    for note in res.notes:
        click.echo(f"note: {note}")
    click.echo(
        f"wrote {res.tree} ({len(m.points)} point(s), {len(m.files)} files); check it with `trajbench review {res.tree}`"
    )


@cli.command("review")
@example(
    "trajbench review submission --previous submission-2026-04 --out review",
    needs="two submission trees of `trajbench submit`, this one and the one published before it",
)
@click.argument("tree", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--previous",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="The previous submission tree of the same system: added and removed points are listed, a changed "
    "number of a published point fails.",
)
@click.option(
    "--out",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder for review.md and review.json (default: TREE).",
)
@click.option(
    "--expected-hash",
    default=None,
    help="The official dataset's content hash (default: eval/data/official.json for a built-in profile, the "
    "--registry file for a user one).",
)
@click.option(
    "--shards",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="The dataset's shard folder, when the one the runs name is not on this machine.",
)
@REGISTRY_OPTION
@PROFILES_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print review.json.")
def review_cmd(
    tree: str,
    previous: str | None,
    out: str | None,
    expected_hash: str | None,
    shards: str | None,
    registry: str | None,
    as_json: bool,
) -> None:
    """Verify the submission tree TREE without trusting it (docs/submission.md): seals, numbers
    recomputed from the records, the compliance check, the dataset hash, the MLPerf checker's
    fields and, with --previous, what changed. Writes review.md and review.json; exits 1 on any
    failure."""
    res = evaluation.review(
        tree, previous=previous, out=out, expected_hash=expected_hash, registry=registry, shards=shards
    )
    report = res.report
    if as_json:
        click.echo(report.text(), nl=False)
    else:
        for c in report.failures():
            click.echo(f"FAIL {c.point} {c.check}: {c.reason}")
        verdict = "passed" if report.passed else f"FAILED ({report.failed} of {report.total} checks)"
        click.echo(f"review {verdict}; wrote {res.md_path} and {res.json_path}")
    if not report.passed:
        raise evaluation.EvalError(f"{report.failed} of {report.total} review checks failed; see {res.md_path}")


# ---------------------------------------------------------------- explore
@cli.command("explore")
@example("trajbench explore --label mysystem=sweep,runs/c8 --out site")
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for the explorer (index.html and its files); an explorer already there is replaced.",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="NAME=DIR[,DIR…]",
    help="Name a system and its sweep or run folders (repeatable); of several runs at one concurrency the latest "
    "is the point.",
)
def explore(dirs: tuple[str, ...], out: str, labels: tuple[str, ...]) -> None:
    """A results explorer for buyers from submission trees, sweep folders and run folders DIRS
    (each searched for all three): one folder, opened from disk with no server or network.

    Pareto step curves and metrics against concurrency, normalised per accelerator, per dollar-hour
    and per watt where a system's description gives them; filters, overlays and hover; the view
    lives in the URL. Points that failed a gate or a review are hidden until asked for; research
    and simulated points are labelled (docs/explore.md)."""
    from eval.explore import build_explorer

    named = _label_dirs((), labels)
    if not dirs and not named:
        raise click.UsageError("give at least one submission tree, sweep or run folder")
    site = build_explorer([Path(d) for d in dirs], Path(out), labels=named, gates_of=evaluation.gate_verdicts)
    hidden = f" ({site.failed:,} failed, hidden until asked for)" if site.failed else ""
    click.echo(f"explorer: {site.index}: {site.systems:,} system(s), {site.points:,} point(s){hidden}")
    click.echo("      open it in a browser (no server needed); the view's URL reproduces it")


# ---------------------------------------------------------------- analyze
@cli.group("analyze")
def analyze_group() -> None:
    """Explain a run's numbers: why each turn missed the prefix cache (docs/cache.md)."""


@analyze_group.command("cache")
@example("trajbench analyze cache runs/c8")
@click.argument("run_dir", type=click.Path())
@click.option(
    "--block-size",
    default=None,
    type=click.IntRange(min=1),
    help="The engine's KV-cache block size in tokens (default: inferred as the gcd of the cached counts).",
)
@click.option(
    "--out", default=None, type=click.Path(file_okay=False), help="Folder for the results (default: RUN_DIR)."
)
@click.option(
    "--tokenizer",
    default=None,
    help="Count prompts with NAME or NAME:PATH (default: the run's tokenizer, else its profile's).",
)
@click.option("--shards", default=None, help="The shard folder the run replayed, if not where run.json says.")
@click.option(
    "--template-check",
    default=None,
    type=click.Path(dir_okay=False),
    help="A `traces check-template --json` file of the run's shards: turns whose engine tokens part from the "
    "client's inside the ideal prefix are template drift (docs/cache.md).",
)
def analyze_cache(
    run_dir: str,
    block_size: int | None,
    out: str | None,
    tokenizer: str | None,
    shards: str | None,
    template_check: str | None,
) -> None:
    """Per-turn cache deficit of a run (or of each point of a sweep folder), attributed to one
    cause each: block granularity, history marker/salt, affinity miss, eviction, template drift or
    unexplained; the rule of each cause is in docs/cache.md. Writes cache_analysis.json,
    cache_turns.parquet and PNG plots, which `trajbench report` shows."""
    from rich.console import Console

    from replay import cacheobs
    from replay.results import SWEEP_FILE

    options = cacheobs.CacheOptions(
        block_size=block_size, tokenizer=tokenizer, shards=shards, template_check=template_check
    )
    console = Console()
    if (Path(run_dir) / SWEEP_FILE).is_file():
        swept = cacheobs.analyse_sweep(run_dir, options, out)
        for _, r in swept.points:
            console.print(cacheobs.cause_table(r.analysis))
            for line in cacheobs.warnings(r.analysis):
                click.echo(line, err=True)
        click.echo(f"wrote each point's cache_analysis.json and {swept.chart}")
        return
    result = cacheobs.analyse_cache(run_dir, options, out)
    console.print(cacheobs.cause_table(result.analysis))
    for line in cacheobs.warnings(result.analysis):
        click.echo(line, err=True)
    click.echo(f"wrote {len(result.files)} files to {result.out}")


# ---------------------------------------------------------------- audit
@cli.command("audit")
@example(
    "trajbench audit sweep --swebench swe1 --swebench swe2 --swebench swe3 --swebench swe4",
    needs="a sweep against a real server and four SWE-bench runs (docs/audits.md)",
)
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--swebench",
    "swebench",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A SWE-bench result folder whose engine must match the points' (repeatable).",
)
@click.option(
    "--tokenizer",
    default=None,
    help="Count prompts with NAME or NAME:PATH for the cache audits (default: the run's tokenizer, else its profile's).",
)
@click.option(
    "--block-size",
    default=None,
    type=click.IntRange(min=1),
    help="The engine's KV-cache block size in tokens (default: inferred as the gcd of the cached counts).",
)
@click.option("--shards", default=None, help="The shard folder the runs replayed, if not where run.json says.")
@click.option("--json", "as_json", is_flag=True, help="Print every audit's figures and offending turns as JSON.")
@PROFILES_OPTION
def audit(
    run_dirs: tuple[str, ...],
    swebench: tuple[str, ...],
    tokenizer: str | None,
    block_size: int | None,
    shards: str | None,
    as_json: bool,
) -> None:
    """The agentic audits of RUN_DIRS (run folders, or a sweep folder for its finished points):
    cache exploit, warm cache, output consistency, and the same engine identity across the
    points and the SWE-bench runs. Each audit's rule is in docs/audits.md; `eval check` runs them too.

    Exits 1 when any audit fails."""
    from eval.audits import AuditOptions, audit_json, audit_runs

    results = audit_runs(
        run_dirs, swebench=swebench, options=AuditOptions(tokenizer=tokenizer, block_size=block_size, shards=shards)
    )
    if as_json:
        click.echo(json.dumps(audit_json(results), indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table("point", "audit", "result", "reason")
        for r in results:
            table.add_row(r.point, r.audit, "[green]pass[/]" if r.passed else "[red]FAIL[/]", r.reason)
        Console(width=max(120, Console().width)).print(table)
    failed = sum(not r.passed for r in results)
    if failed:
        click.echo(f"{failed} of {len(results)} audits failed (docs/audits.md)", err=True)
        raise evaluation.GateFailed(f"{failed} of {len(results)} audits failed")


# ---------------------------------------------------------------- serve-sim
def _sim_options(command: F) -> F:
    """One click option per `replay.sim.OPTIONS` entry (python -m replay.sim uses the same table);
    the step-time coefficients show serve-sim's own default, the fast one (`--realistic` aside)."""
    from replay.sim import FAST_STEP_MODEL, OPTIONS

    for opt in reversed(OPTIONS):
        kind = click.Choice(opt.choices) if opt.choices else opt.kind
        shown = (
            f"{FAST_STEP_MODEL[opt.dest]:g}; {opt.shown_default} with --realistic"
            if opt.dest in FAST_STEP_MODEL
            else opt.shown_default
        )
        command = click.option(
            f"--{opt.name}",
            opt.dest,
            type=kind,
            default=None,
            metavar=opt.metavar,
            help=f"{opt.help} [default: {shown}]",
        )(command)
    return command


@cli.command("serve-sim")
@example("trajbench serve-sim --port 8000 --answers oracle --shards shards")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Interface to bind (loopback unless told otherwise)."
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0 = a free one).")
@click.option(
    "--realistic",
    is_flag=True,
    help="Pace answers like a mid-size GPU server (the default step model) instead of 64x faster; minutes per "
    "long trajectory instead of seconds.",
)
@_sim_options
def serve_sim(host: str, port: int, realistic: bool, **options: object) -> None:
    """Run the simulated OpenAI-compatible endpoint (no GPU; every response says it is simulated).

    It is as quick as the simulator `replay run` embeds: its step model runs 64x faster than a
    mid-size GPU server, so a long trajectory takes seconds; --realistic paces it like that server
    (any --step-base-ms, --prefill-ms-per-token or --batch-ms-per-seq given is kept either way)."""
    from replay.sim import describe, serve, standalone_config

    config = standalone_config(options, realistic=realistic)
    serve(
        config,
        host,
        port,
        ready=lambda url: click.echo(f"trajbench-sim ({describe(config)}) listening on {url}  (Ctrl+C to stop)"),
    )


# ---------------------------------------------------------------- demo
@cli.command("demo")
@example("trajbench demo --out demo-out")
@click.option(
    "--out",
    default="demo-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for everything the demo writes.",
)
@PROGRESS_OPTION
def demo(out: str, progress: str) -> None:
    """The main job end to end, offline, in about a minute: synthetic traces → shards →
    concurrency sweep against the embedded simulator → accuracy gates → Pareto report."""
    replay.run_loop(jobs.run_demo(out, echo=click.echo, progress=progress))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every command's clean-up (a build's temporary folder,
    a partial output file) runs before the process ends."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> None:
    """Console entry point and the one error boundary (the only place that exits).

    Exit codes: 0 success, 1 an error (printed as `Error: …`) or a failed gate (after its
    verdict), 2 a usage error, 3 every turn of a run failed, 130 interrupted by Ctrl-C (SIGINT),
    143 terminated by SIGTERM."""
    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if previous is not None:
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        cli.main(args=argv, prog_name="trajbench", standalone_mode=False)
    except click.exceptions.Abort as exc:  # click turns Ctrl-C (and so our SIGTERM) into Abort
        terminated = isinstance(exc.__cause__, Terminated)
        click.echo("Terminated." if terminated else "Aborted.", err=True)
        sys.exit(143 if terminated else 130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except evaluation.GateFailed as exc:  # the verdict is printed; the exit code says no
        sys.exit(exc.exit_code)
    except replay.Interrupted as exc:
        click.echo(f"Interrupted: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KNOWN_ERRORS as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", 1))
    except Terminated:
        click.echo("Terminated.", err=True)
        sys.exit(143)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except OSError as exc:  # the file system said no (read-only, full, /proc, permissions)
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"Error: {where}{exc.strerror or exc}; check the path and that its folder is writable", err=True)
        sys.exit(1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    main()
