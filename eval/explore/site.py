"""`trajbench explore`: the results explorer's folder, built from input folders (docs/explore.md).

The folder is the whole site, opened from disk with no server and no network: `index.html`, the
page's code (`explore.js`) and style (`explore.css`), shipped with trajbench, and its data
(`data.js`, a script that assigns the data: a page opened from a file cannot fetch JSON), plus
each run's own report under `runs/`. The charts are SVG the page draws itself.

The same inputs give the same bytes: everything is sorted and nothing records when or where it
was built. The folder is made beside `--out` and swapped in whole, so a failure leaves the
previous explorer as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import traces
from replay.report import GatesOf

from ..errors import EvalError
from .model import Built, ExploreData, explore_data
from .sources import discover

INDEX_FILE = "index.html"
DATA_FILE = "data.js"
ASSETS = (INDEX_FILE, "explore.js", "explore.css")
#: the line of index.html that marks a folder as an explorer, which `--out` may replace
GENERATOR = '<meta name="generator" content="trajbench explore">'


@dataclass(frozen=True)
class ExploreSite:
    """What `build_explorer` wrote."""

    index: Path
    systems: int
    points: int  # the systems' current points
    failed: int  # of them, failed ones (hidden until asked for)


def data_script(data: ExploreData) -> str:
    """data.js: one assignment of the data (canonical JSON: sorted keys, no spaces)."""
    payload = json.dumps(traces.to_json(data), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return f"// trajbench explore: the explorer's data (docs/explore.md)\nwindow.TRAJBENCH_EXPLORE = {payload};\n"


def _check_out(out: Path, inputs: list[Path]) -> None:
    if out.exists() and not out.is_dir():
        raise EvalError(f"--out {out}: is a file; give a folder for the explorer")
    for src in inputs:
        if src.resolve() == out.resolve() or src.resolve().is_relative_to(out.resolve()):
            raise EvalError(
                f"--out {out}: holds the input {src}; replacing it would delete it, so choose another --out"
            )
    if out.is_dir() and any(out.iterdir()):
        index = out / INDEX_FILE
        if not (index.is_file() and GENERATOR in index.read_text(encoding="utf-8", errors="replace")):
            raise EvalError(
                f"--out {out}: a folder that holds something other than an explorer; `trajbench explore` replaces "
                "only a folder it wrote, so choose another --out (or empty this one yourself)"
            )


def _write(built: Built, stage: Path) -> None:
    assets = resources.files("eval.explore").joinpath("assets")
    for name in ASSETS:
        (stage / name).write_bytes(assets.joinpath(name).read_bytes())
    (stage / DATA_FILE).write_text(data_script(built.data), encoding="utf-8")
    for dest, source in sorted(built.pages.items()):
        target = stage / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def _swap(stage: Path, out: Path) -> None:
    if not out.exists():
        stage.rename(out)
        return
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    out.rename(old)
    try:
        stage.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_site(built: Built, out: Path, inputs: list[Path]) -> ExploreSite:
    _check_out(out, inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.parent / f".{out.name}.building-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    try:
        _write(built, stage)
        _swap(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    current = [p for p in built.data.points if p.current]
    return ExploreSite(
        out / INDEX_FILE,
        len(built.data.systems),
        len(current),
        sum(p.verdict == "failed" for p in current),
    )


def build_explorer(
    dirs: list[Path],
    out: Path,
    *,
    labels: list[tuple[str, Path]] | None = None,
    gates_of: GatesOf | None = None,
) -> ExploreSite:
    """The explorer of every submission tree, sweep folder and run folder in `dirs` (searched)
    and of the `labels` (name, sweep or run folder) pairs; `gates_of` reads a run folder's
    accuracy verdicts (eval's `gate_verdicts`; without it no point fails a gate)."""
    traces.check_writable(out, error=EvalError)  # before reading thousands of run folders
    sources = discover(dirs, labels)
    built = explore_data(sources, gates_of)
    return write_site(built, out, [*dirs, *(f for _, f in labels or [])])
