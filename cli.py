"""The `trajbench` command line: a thin click layer over the traces, replay and eval libraries
and the cross-package jobs (`jobs`).

Each command parses options, calls one library function and prints what it returns; it never
exits by itself. `main` is the one error boundary: the packages' own errors become `Error: …`
with exit code 1 (or the error's own `exit_code`: 3 when every turn of a replay failed, 130 or
143 for an interrupted run), a failed gate exits 1 after its verdict, never a traceback.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

import eval as evaluation
import jobs
import replay
import traces
from eval.swebench import RUNTIMES as SWEBENCH_RUNTIMES  # light: imports none of the extra
from replay.sim import SimError

F = TypeVar("F", bound=Callable[..., Any])
KNOWN_ERRORS = (traces.TraceError, replay.ReplayError, SimError, evaluation.EvalError)


def example(command_line: str) -> Callable[[F], F]:
    """Append one `Example:` to a command's help (kept on its own line, not rewrapped)."""

    def add(f: F) -> F:
        f.__doc__ = (f.__doc__ or "").rstrip() + f"\n\n    Example:\n\n    \b\n      {command_line}\n"
        return f

    return add


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


#: Any path: `traces.Shards` says what it is when it is not a shard folder (a trace file or a
#: dataset folder is to be built first, and the message gives the command).
SHARDS_ARGUMENT = click.argument("shards_dir", type=click.Path())

FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(traces.FORMATS)),
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
PROGRESS_OPTION = click.option(
    "--progress",
    type=click.Choice(traces.PROGRESS_MODES),
    default="auto",
    show_default=True,
    help=f"Progress on stderr: rich (a live line), plain (a status line every {traces.PLAIN_SECONDS:g} s; "
    f"{traces.PROGRESS_SECONDS_ENV} sets another interval), none; auto = rich on a terminal, else plain.",
)


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
            f"{traces.error_count(errors):,} error(s); {n_traj} valid trajectories ({n_turns} client turns)"
        )
    click.echo(f"ok: {n_traj} trajectories, {n_turns} client turns")


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
    type=click.Choice(traces.SALT_MODES),
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
        f"built {out}: {c.trajectories} trajectories, {c.instances} instances, {c.client_turns} client turns in {len(m.shards)} shard(s)"
    )
    if (hm := m.history_marker) is not None:
        where = ", ".join(f"{k} {v}" for k, v in hm.positions.items()) or "none"
        how = (
            f"checked against the {hm.checked_with_template} chat template"
            if hm.checked_with_template
            else "no template given (--tokenizer checks it)"
        )
        click.echo(f"history marker: {hm.assistant_messages} replayed assistant messages; positions: {where}; {how}")
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
    v = traces.verify_shards(traces.Shards(shards_dir), content=not files_only)
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
    type=click.Choice(sorted(traces.FORMATS)),
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
        f"wrote {out}: {r.trajectories} trajectories ({r.coding} coding, {r.workflow} workflow), {r.client_turns} client turns, {r.assistant_turns} assistant turns, {r.rows} rows"
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
@example("trajbench traces card shards --out data_cards/NAME.md --tokenizer qwen3.6")
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
@example("trajbench traces publish shards --profile kimi-k3 --out release/kimi-k3-v1")
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
@example("trajbench traces check-template shards --endpoint http://localhost:8000 --sample 50 --json parity.json")
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
    help="Served model name (default: the profile's; if the endpoint does not serve it and serves exactly one model, that one, docs/engines.md).",
)
@click.option(
    "--json", "json_out", default=None, type=click.Path(dir_okay=False), help="Also write the report as JSON."
)
@click.option("--strict", is_flag=True, help="Exit 1 unless every sampled turn's ids are identical.")
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
    differ with the text around it on both sides; then the share of identical turns. Exit 0
    whatever the parity unless --strict."""
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
    if strict and report.identical < len(report.turns):
        raise replay.ReplayError(
            f"template parity {100 * report.parity:.1f} % < 100 % (--strict): the engine tokenises "
            f"{len(report.turns) - report.identical} of {len(report.turns)} sampled prompts differently; "
            "see the first divergence of each above (docs/templates.md)"
        )


@cli.group("replay")
def replay_group() -> None:
    """Replay shards closed-loop against an endpoint; sweep concurrency; calibrate the harness."""


@dataclass(frozen=True)
class RunOptions:
    """The options `replay run` and `replay sweep` share (all but concurrency and --out), as
    parsed; `config` turns them into the library's `RunConfig`."""

    shards_dir: str
    endpoint: str | None
    profile: str
    model: str | None
    num_trajectories: int | None
    no_delays: bool
    stop_at_window_end: bool
    turn_timeout: float
    drain_timeout: float
    headers: tuple[str, ...]
    no_session_header: bool
    workers: int
    backend: str
    ray_address: str | None
    ray_resource: str | None
    min_workers: int
    overwrite: bool
    tokenizer: str | None
    api_key_env: str
    sim_args: str
    max_completion_tokens: int | None
    skip_preflight: bool
    max_response_mb: int
    max_event_mb: int
    max_header_kb: int
    slo: str | None
    session_slo: float | None
    progress: str
    replica_header: str | None

    def _shards_profile(self) -> str:
        """The profile the shards' token columns were counted for (`traces show`'s default too)."""
        profile, note = traces.shards_profile(traces.Shards(self.shards_dir), quiet_without_tokenizer=True)
        if note:
            click.echo(f"Note: {note}", err=True)
        return profile.name

    def config(self, concurrency: int, out: str | None, *, overwrite: bool | None = None) -> replay.RunConfig:
        if self.no_session_header and self.headers:
            raise click.UsageError("--header and --no-session-header exclude each other")
        from replay.sim import SimConfig, embedded_config

        try:
            sim_words = shlex.split(self.sim_args)
        except ValueError as exc:
            raise click.BadParameter(f"{self.sim_args!r}: {exc}", param_hint="--sim-args") from None
        if self.endpoint is not None and sim_words:
            raise click.UsageError(
                "--sim-args configures the embedded simulator, which runs only without --endpoint; drop one of them"
            )
        sim: SimConfig | None
        if self.endpoint is None:  # the embedded simulator: its defaults for these shards, then --sim-args
            sim = embedded_config(str(Path(self.shards_dir).resolve()), sim_words)
        else:
            sim = None
        return replay.RunConfig(
            shards=self.shards_dir,
            endpoint=self.endpoint,
            profile=self.profile or self._shards_profile(),
            model=self.model,
            concurrency=concurrency,
            num_trajectories=self.num_trajectories,
            inject_delays=not self.no_delays,
            stop_at_window_end=self.stop_at_window_end,
            turn_timeout=self.turn_timeout,
            drain_timeout=self.drain_timeout,
            headers=() if self.no_session_header else (self.headers or replay.DEFAULT_HEADERS),
            workers=self.workers,
            backend=self.backend,
            ray_address=self.ray_address,
            ray_resource=self.ray_resource,
            min_workers=self.min_workers,
            out=out,
            overwrite=self.overwrite if overwrite is None else overwrite,
            tokenizer=self.tokenizer,
            api_key=os.environ.get(self.api_key_env) or None,
            api_key_env=self.api_key_env,
            sim=sim,
            max_completion_tokens=self.max_completion_tokens,
            skip_preflight=self.skip_preflight,
            progress=self.progress,
            replica_header=self.replica_header,
            limits=replay.ResponseLimits(
                max_header_bytes=self.max_header_kb << 10,
                max_event_bytes=self.max_event_mb << 20,
                max_response_bytes=self.max_response_mb << 20,
            ),
            slo=replay.parse_slo(self.slo, self.session_slo),
        )


_RUN_OPTION_NAMES = tuple(f.name for f in fields(RunOptions))

# ---------------------------------------------------------------- --config FILE
# An eager option read before the others: its values become the command's `default_map`, so an
# option given on the command line wins over the file and the file wins over the defaults.
_CONFIG = "trajbench.config"  # ctx.meta: the replay.OptionsFile read
_FILE_SHARDS = "trajbench.config-shards"  # ctx.meta: (where, folder) of a file's `shards` that is no folder


def _option_keys(command: click.Command) -> dict[str, click.Parameter]:
    """Each option's key in a --config file: its long name with underscores (`shards` for SHARDS_DIR)."""
    keys: dict[str, click.Parameter] = {}
    for p in command.params:
        if not p.expose_value or p.name is None:
            continue
        if isinstance(p, click.Argument):
            keys["shards" if p.name == "shards_dir" else p.name] = p
        else:
            keys[max((o for o in p.opts if o.startswith("--")), key=len)[2:].replace("-", "_")] = p
    return keys


def _file_value(ctx: click.Context, param: click.Parameter, key: str, raw: Any, where: str) -> Any:
    """A file's value checked against the option's type (strictly: `true` is no number) and
    converted as the command line would convert it."""

    def wrong(want: str) -> replay.ReplayError:
        shown = json.dumps(raw, default=str)[:60]
        return replay.ReplayError(
            f"{where}: {key}: expected {want}, found {shown}; fix the value (`{ctx.command_path} --help` describes it)"
        )

    value: Any
    if isinstance(param, click.Option) and param.is_flag:
        if not isinstance(raw, bool):
            raise wrong("true or false")
        return raw
    if param.multiple:  # a list, or one string for a list of one
        value = [raw] if isinstance(raw, str) else raw
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise wrong("a list of strings")
    elif param.name == "concurrency_list":  # `replay sweep`: 8, [1, 2, 4] or "1,2,4"
        if isinstance(raw, list) and raw and all(isinstance(v, int) and not isinstance(v, bool) for v in raw):
            value = ",".join(map(str, raw))
        elif isinstance(raw, (int, str)) and not isinstance(raw, bool):
            value = str(raw)
        else:
            raise wrong("a concurrency or a list of them, e.g. [1, 2, 4, 8]")
    elif isinstance(param.type, click.types.IntParamType):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise wrong("an integer")
        value = raw
    elif isinstance(param.type, click.types.FloatParamType):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise wrong("a number")
        value = float(raw)
    elif not isinstance(raw, str):
        raise wrong("a string")
    else:
        value = raw
    try:
        return param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise replay.ReplayError(f"{where}: {key}: {exc.message.rstrip('.')}; fix the value") from None


def _read_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    options = replay.read_options_file(value)
    keys = _option_keys(ctx.command)
    defaults = dict(ctx.default_map or {})
    for key, raw in options.values.items():
        where = options.where(key)
        target = keys.get(key)
        if target is None or target.name is None:
            close = difflib.get_close_matches(key.replace("-", "_").lower(), keys, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise replay.ReplayError(f"{where}: unknown key {key!r}{hint}; valid keys: {', '.join(sorted(keys))}")
        if isinstance(target, click.Argument):  # SHARDS_DIR: checked once we know the command line's
            if not isinstance(raw, str):
                raise replay.ReplayError(
                    f"{where}: shards: expected a folder name, found {json.dumps(raw, default=str)[:60]}"
                )
            if Path(raw).is_dir():
                defaults[target.name] = raw
            else:
                ctx.meta[_FILE_SHARDS] = (where, raw)
            continue
        defaults[target.name] = _file_value(ctx, target, key, raw, where)
    ctx.default_map = defaults
    ctx.meta[_CONFIG] = options


def _shards_of(ctx: click.Context, given: str | None) -> str:
    """SHARDS_DIR, from the command line or the --config file; a run.json's own shards must still
    hold the dataset the run replayed (`replay.check_run_dataset`)."""
    if given is None:
        if _FILE_SHARDS in ctx.meta:
            where, folder = ctx.meta[_FILE_SHARDS]
            raise replay.ReplayError(
                f"{where}: shards: no folder {folder}; build the shards there (`trajbench traces build`) "
                "or name the shard folder on the command line"
            )
        raise click.UsageError("Missing argument 'SHARDS_DIR' (or `shards` in the --config file).", ctx=ctx)
    options = ctx.meta.get(_CONFIG)
    if options is not None and options.run is not None:
        named = ctx.get_parameter_source("shards_dir") is ParameterSource.COMMANDLINE
        note = replay.check_run_dataset(options.run, options.path, given, named_on_command_line=named)
        if note:
            click.echo(note, err=True)
    return given


def _command_line_wins(ctx: click.Context, values: dict[str, Any], *pair: tuple[str, Any]) -> None:
    """Of two options that exclude each other, one given on the command line sets the other, when
    it came from the --config file, back to `unset`."""
    (a, _), (b, _) = pair
    unset = dict(pair)
    for mine, other in ((a, b), (b, a)):
        if ctx.get_parameter_source(mine) is ParameterSource.COMMANDLINE:
            if ctx.get_parameter_source(other) is ParameterSource.DEFAULT_MAP:
                values[other] = unset[other]


CONFIG_HELP = (
    "Read options from a YAML or JSON file: keys are the option names with underscores "
    "(turn_timeout, header, sim_args; shards for SHARDS_DIR, a relative path read from the current "
    "folder); the command line wins over the file. "
    "A finished run's run.json replays that run (refused if its shards changed since). "
    "Never put an API key in it: name its variable with api_key_env."
)


#: Goodput under service-level objectives (replay.results.goodput, docs/metrics.md); never changes what is sent.
SLO_OPTIONS = (
    click.option(
        "--slo",
        default=None,
        help="Per-turn SLO for goodput, e.g. ttft_ms=2000,tpot_ms=50 (either key optional; docs/metrics.md).",
    ),
    click.option(
        "--session-slo",
        default=None,
        type=click.FloatRange(min=0, min_open=True),
        help="Session SLO for goodput: seconds of a trajectory's active time (sum of its turns' E2E, delays left out).",
    ),
)


def run_options(f: F) -> F:
    """Add the shared options to a command and hand it one `RunOptions` (as `opts`)."""
    options = [
        click.argument("shards_dir", required=False, type=click.Path()),
        click.option(
            "--config",
            type=click.Path(exists=True, dir_okay=False),
            is_eager=True,
            expose_value=False,
            callback=_read_config,
            help=CONFIG_HELP,
        ),
        click.option(
            "--endpoint",
            default=None,
            help="Base URL of an OpenAI-compatible server (default: start the embedded simulator).",
        ),
        profile_option(
            None,
            "Model profile: fixed sampling parameters (docs/requests.md); default: the one the shards' "
            "tokenizer belongs to, else kimi-k3 (as `traces show`).",
        ),
        click.option(
            "--model",
            default=None,
            help="Served model name (default: the profile's; if the endpoint does not serve it and serves exactly one model, that one, docs/engines.md).",
        ),
        click.option(
            "--trajectories",
            "num_trajectories",
            default=None,
            type=click.IntRange(min=1),
            help="Trajectory instances to start (default: one pass over the shards).",
        ),
        click.option("--no-delays", is_flag=True, help="Skip the recorded inter-turn delays (not official)."),
        click.option(
            "--stop-at-window-end",
            is_flag=True,
            help="Stop issuing when the performance window closes (stop_issuing_on_first_user_complete; not official).",
        ),
        click.option(
            "--turn-timeout",
            default=600.0,
            show_default=True,
            type=click.FloatRange(min=0, min_open=True),
            help="Seconds per turn; a timed-out request is cancelled.",
        ),
        click.option(
            "--drain-timeout",
            default=10.0,
            show_default=True,
            type=click.FloatRange(min=0),
            help="After Ctrl-C, seconds in-flight turns may finish before they are cancelled.",
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            help="Session header name carrying the logical id (repeatable; default X-Session-ID).",
        ),
        click.option("--no-session-header", is_flag=True, help="Send no session header."),
        click.option(
            "--workers",
            default=1,
            show_default=True,
            type=click.IntRange(min=1),
            help="Workers sharing the slots (1 = in-process); processes, or Ray actors with --backend ray.",
        ),
        click.option(
            "--backend",
            type=click.Choice(replay.BACKENDS),
            default="auto",
            show_default=True,
            help="Where workers run: auto (in-process for 1, else processes), process, or ray (docs/ray.md).",
        ),
        click.option("--ray-address", default=None, help="--backend ray: the cluster's HOST:PORT.  [default: auto]"),
        click.option("--ray-resource", default=None, help="--backend ray: pin workers to nodes with this resource."),
        click.option(
            "--min-workers",
            default=1,
            show_default=True,
            type=click.IntRange(min=1),
            help="--backend ray: stop with an error when fewer workers are left alive.",
        ),
        click.option("--overwrite", is_flag=True, help="Reuse an existing run folder."),
        click.option(
            "--tokenizer",
            default=None,
            help="Count output tokens client-side with NAME or NAME:PATH when the server sends no usage.",
        ),
        click.option(
            "--api-key-env",
            default="OPENAI_API_KEY",
            show_default=True,
            help="Environment variable holding the bearer token; the key is never written anywhere.",
        ),
        click.option(
            "--sim-args",
            default="",
            help="Options of the embedded simulator over its defaults here (oracle answers from the shards, step "
            'model 64x faster), e.g. "--answers synthetic --osl-mean 64" (see `trajbench serve-sim --help`).',
        ),
        click.option(
            "--max-completion-tokens",
            default=None,
            type=click.IntRange(min=1),
            help="Override the profile's output cap (e.g. a tiny model in CI; not official).",
        ),
        click.option(
            "--skip-preflight",
            is_flag=True,
            help="Start without first checking the endpoint (models list and one tiny request).",
        ),
        click.option(
            "--max-response-mb",
            default=64,
            show_default=True,
            type=click.IntRange(min=1),
            help="Cap on everything one turn's response may send; beyond it the turn fails (too_large).",
        ),
        click.option(
            "--max-event-mb",
            default=8,
            show_default=True,
            type=click.IntRange(min=1),
            help="Cap on one SSE line or event of a response (too_large beyond it).",
        ),
        click.option(
            "--max-header-kb",
            default=64,
            show_default=True,
            type=click.IntRange(min=1),
            help="Cap on a response's status line and headers (too_large beyond it).",
        ),
        *SLO_OPTIONS,
        PROGRESS_OPTION,
        click.option(
            "--replica-header",
            default=None,
            help="Keep this response header's value per turn (which replica served it; the simulator "
            "sends X-Sim-Replica), for `trajbench analyze cache` (docs/cache.md).",
        ),
    ]

    @functools.wraps(f)
    def command(**kw: Any) -> Any:
        ctx = click.get_current_context()
        _command_line_wins(ctx, kw, ("headers", ()), ("no_session_header", False))
        kw["shards_dir"] = _shards_of(ctx, kw["shards_dir"])
        opts = RunOptions(**{name: kw.pop(name) for name in _RUN_OPTION_NAMES})
        return f(opts=opts, **kw)

    wrapped: Any = command
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[no-any-return]


def _say_target(config: replay.RunConfig) -> None:
    """One line saying what a run without --endpoint measures (never a real server)."""
    if config.endpoint is None:
        from replay.sim import SimConfig, describe

        click.echo(
            f"target: embedded simulator — {describe(config.sim or SimConfig())}; "
            "pass --endpoint to measure a server, --sim-args to change it"
        )


GATES_OPTION = click.option(
    "--gates",
    type=click.Choice(evaluation.GATE_MODES),
    default="official",
    show_default=True,
    help="Accuracy bars: official (the profile's threshold and OSL band), dataset (research: derived from "
    "this dataset's recorded answers), off (research: not judged); only official makes an official point "
    "(docs/accuracy.md).",
)


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
      130  interrupted (Ctrl-C or SIGTERM): a run keeps the turns that finished; a sweep stops
           at that point and resumes there
"""


def _exit_codes(f: F) -> F:
    f.__doc__ = (f.__doc__ or "").rstrip() + "\n" + _RUN_EXIT_CODES
    return f


@replay_group.command("run")
@example("trajbench replay run shards -c 8 --endpoint http://localhost:8000")
@run_options
@click.option(
    "--concurrency",
    "-c",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Slots (simulated users), each with at most one request in flight.",
)
@click.option(
    "--out", default=None, type=click.Path(file_okay=False), help="Run folder (default: trajbench-runs/<time>-c<C>)."
)
@GATES_OPTION
@_exit_codes
def replay_run(opts: RunOptions, concurrency: int, out: str | None, gates: str) -> None:
    """Replay SHARDS_DIR closed-loop and write a run folder (records, summary, report), then
    score its inline accuracy and OSL gate.

    Without --endpoint the embedded simulator serves the run: oracle answers from the shards and
    its step model 64x faster than the default (the run says so; --sim-args changes any of it)."""
    config = opts.config(concurrency, out)
    _say_target(config)
    result = replay.run_loop(jobs.scored_run(config, gates))
    click.echo((result.run_dir / replay.REPORT_FILE).read_text("utf-8"), nl=False)
    for line in result.verdict.lines() if result.verdict is not None else []:
        click.echo(line)
    click.echo(f"run folder: {result.run_dir}")
    if result.outcome.all_failed:  # there was nothing to score
        raise result.outcome.failure(result.run_dir)
    if result.outcome.interrupted:
        raise replay.Interrupted("issuing stopped early; the results cover the turns that finished", 130)


@replay_group.command("sweep")
@example("trajbench replay sweep shards --concurrency 1,4,16 --out sweep --endpoint http://localhost:8000")
@run_options
@click.option(
    "--concurrency", "-c", "concurrency_list", default=None, help="Comma-separated concurrencies, e.g. 1,2,4,8,16."
)
@click.option(
    "--regions", is_flag=True, help="Place >= 7 points over log2 regions up to --max-concurrency (1 + 3 + 3)."
)
@click.option("--max-concurrency", default=64, show_default=True, type=click.IntRange(min=1), help="Top of --regions.")
@click.option(
    "--out", required=True, type=click.Path(file_okay=False), help="Sweep folder; rerun the same command to resume it."
)
@click.option(
    "--add",
    is_flag=True,
    help="Add points to the existing sweep in --out: run only the concurrencies it lacks, keep the rest.",
)
@GATES_OPTION
@_exit_codes
def replay_sweep(
    opts: RunOptions,
    concurrency_list: str | None,
    regions: bool,
    max_concurrency: int,
    out: str,
    add: bool,
    gates: str,
) -> None:
    """One full replay per concurrency (each scored for accuracy), resumable; then `trajbench report`.

    Ctrl-C or SIGTERM drains the running point, marks it interrupted in sweep.json and stops the
    sweep (exit 130 or 143); a point where every turn failed stops it too (exit 3). The same
    command resumes the sweep, rerunning that point. With --add, the sweep in --out grows by the
    concurrencies it lacks (results are submitted incrementally: a baseline, then more points).
    Without --endpoint every point runs against the embedded simulator, as in `replay run`."""
    given: dict[str, Any] = {"concurrency_list": concurrency_list, "regions": regions}
    _command_line_wins(click.get_current_context(), given, ("concurrency_list", None), ("regions", False))
    concurrency_list, regions = given["concurrency_list"], given["regions"]
    if regions == (concurrency_list is not None):
        raise click.UsageError("give exactly one of --concurrency LIST or --regions")
    levels = (
        replay.region_concurrencies(max_concurrency) if regions else replay.parse_concurrencies(concurrency_list or "")
    )
    # overwrite: a sweep manages its own point folders
    config = opts.config(1, None, overwrite=True)
    _say_target(config)
    folder = replay.run_loop(jobs.scored_sweep(config, levels, out, echo=click.echo, gates=gates, add=add))
    click.echo(f"sweep folder: {folder}  (next: trajbench report {folder} --out REPORT_DIR)")


@replay_group.command("calibrate")
@example("trajbench replay calibrate --workers 2 --turns 2000")
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
    help="Turns per saturated run (the paced run uses half).",
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
    type=click.Choice(["agentic-bench", "httpx-default", "none", "trajbench-asyncio", "trajbench-uvloop"]),
    help="Also run this client side by side (repeatable).",
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
    json_out: str | None,
) -> None:
    """Measure the harness's own limits against a loopback server streaming flat out, then paced like an engine."""
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
        echo=lambda s: click.echo(s, err=True),
    )
    for line in format_rows(rows):
        click.echo(line)
    click.echo(layout_line(pin, pacing))
    if json_out:
        Path(json_out).write_text(rows_to_json(rows) + "\n", encoding="utf-8")


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
@example("trajbench eval check sweep/c0001 sweep/c0008 --swebench swe1 --swebench swe2 --swebench swe3 --swebench swe4")
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
        from rich.console import Console
        from rich.table import Table

        table = Table("point", "check", "result", "reason")
        for c in checks:
            table.add_row(c.point, c.check, "[green]pass[/]" if c.passed else "[red]FAIL[/]", c.reason)
        Console(width=max(120, Console().width)).print(table)
    failed = sum(not c.passed for c in checks)
    if failed:
        raise evaluation.EvalError(f"{failed} of {len(checks)} compliance checks failed")


@eval_group.command("swebench")
@example(
    "trajbench eval swebench --dataset verified.parquet --endpoint http://localhost:8000 --profile kimi-k3 --out swe1"
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
    type=click.Choice(sorted(SWEBENCH_RUNTIMES)),
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
        f"SWE-bench {s['profile']} ({s['runtime']}): {s['resolved']}/{s['instances']} resolved = {100 * s['score']:.2f}%, {s['unresolved']} unresolved, {s['incomplete']} incomplete"
    )
    if s["incomplete"]:
        todo = [i for i, status in s["results"].items() if status == "incomplete"]
        click.echo(
            f"incomplete (not counted as resolved; see <id>/agent.log, rerun with --resume): {', '.join(todo[:20])}{' …' if len(todo) > 20 else ''}"
        )
    click.echo(f"wrote {Path(out) / 'swebench_summary.json'} and the swebench line of {Path(out) / 'scores.json'}")


@eval_group.command("swebench-mean")
@example("trajbench eval swebench-mean swe1 swe2 swe3 swe4")
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
    from rich.console import Console
    from rich.table import Table

    def band(lo: float | None, hi: float | None) -> str:
        return "-" if lo is None or hi is None else f"{lo:g}-{hi:g}"

    def pct(x: float | None) -> str:
        return "-" if x is None else f">= {100 * x:.2f}%"

    table = Table(
        "profile",
        "source",
        "served model",
        "tokenizer",
        "request parameters",
        "inline",
        "OSL/turn",
        "SWE-bench",
        "SWE template",
    )
    for name, p in profs.items():
        params = "\n".join(f"{k}={json.dumps(v)}" for k, v in p.request_params().items())
        t = p.thresholds
        table.add_row(
            name,
            p.source,
            p.served_model_name,
            p.tokenizer,
            params,
            pct(t.inline),
            band(t.osl_min, t.osl_max),
            pct(t.swebench),
            p.swebench_template,
        )
    Console(width=max(160, Console().width)).print(table)


@profiles_group.command("derive")
@example("trajbench profiles derive runs/ref1 runs/ref2 --name my-model --out my-model.yaml")
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
    default=100 * evaluation.DEFAULT_OSL_TOLERANCE,
    show_default=True,
    type=click.FloatRange(0, 100, min_open=True, max_open=True),
    help="OSL band half-width, in percent of the reference mean output tokens per turn.",
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
    help="Derive from runs that are not official-shaped (salt, delays, partial; recorded in the profile).",
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
    reference mean output tokens per turn ± --osl-tolerance %, inline threshold = --inline-fraction
    × the reference inline score, SWE-bench threshold from --swebench runs (docs/maintainers.md)."""
    derived = evaluation.derive_profile(
        run_dirs,
        name,
        base=base,
        description=description,
        osl_tolerance=osl_tolerance / 100,
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
@example("trajbench report --label A=sweepA,runA2 --label B=sweepB --out report")
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


# ---------------------------------------------------------------- analyze
@cli.group("analyze")
def analyze_group() -> None:
    """Explain a run's numbers: why each turn missed the prefix cache (docs/cache.md)."""


@analyze_group.command("cache")
@example("trajbench analyze cache runs/c0008 --block-size 16 --template-check parity.json")
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


# ---------------------------------------------------------------- serve-sim
def _sim_options(command: F) -> F:
    """One click option per `replay.sim.OPTIONS` entry (python -m replay.sim uses the same table)."""
    from replay.sim import OPTIONS

    for opt in reversed(OPTIONS):
        kind = click.Choice(opt.choices) if opt.choices else opt.kind
        command = click.option(
            f"--{opt.name}",
            opt.dest,
            type=kind,
            default=None,
            metavar=opt.metavar,
            help=f"{opt.help} [default: {opt.shown_default}]",
        )(command)
    return command


@cli.command("serve-sim")
@example("trajbench serve-sim --port 8000 --answers oracle --shards shards")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Interface to bind (loopback unless told otherwise)."
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0 = a free one).")
@_sim_options
def serve_sim(host: str, port: int, **options: object) -> None:
    """Run the simulated OpenAI-compatible endpoint (no GPU; every response says it is simulated)."""
    from replay.sim import config_from_options, serve

    config = config_from_options(options)
    serve(
        config,
        host,
        port,
        ready=lambda url: click.echo(
            f"trajbench-sim ({config.answers} answers, {config.replicas} replica(s), router {config.router}) listening on {url}  (Ctrl+C to stop)"
        ),
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
