"""What `traces build` and `traces validate` accept as an input, turned into the files to read.

An input is one of (docs/dataset-format.md, "Inputs"):

- a file: JSON Lines or JSON (plain or `.zst`), Parquet or Arrow, told apart by its first bytes;
- a Hugging Face dataset saved with `save_to_disk`: `state.json` + `dataset_info.json` and the
  Arrow files `state.json` lists (in its order), or a `DatasetDict` (`dataset_dict.json`) whose
  splits are read in the order it lists them;
- a folder of data files, such as a dataset repository downloaded from the Hub: the files under
  `data/` if it has data files there (the Hub's layout), else every data file below the folder,
  in path order, hidden folders and the `datasets` metadata files left out;
- `hf:org/name[@revision]`: that dataset's snapshot in the local Hugging Face cache, found offline
  (`traces.inputs.hubcache`); a repository's cache folder (`…/datasets--org--name`) or one of its
  snapshot folders given as a path is read the same way.

The order is deterministic (it is the order trajectories are built in), so the same inputs give
the same shards.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import TraceError
from .hubcache import PREFIX, is_hub_id, repo_cache_snapshot, snapshot

#: File names read as data in a folder (each also with `.zst`, except the binary tables).
DATA_SUFFIXES = (".jsonl", ".json", ".jsonl.zst", ".json.zst", ".parquet", ".arrow")
#: JSON files of a `datasets` folder that describe the data rather than hold it.
METADATA_FILES = frozenset({"dataset_info.json", "dataset_infos.json", "state.json", "dataset_dict.json"})
#: Files of a shard folder; never trace data.
_SHARD_MARK = "manifest.json"


def is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and name not in METADATA_FILES and name.endswith(DATA_SUFFIXES)


def _save_to_disk_files(folder: Path) -> list[Path]:
    """The Arrow files of a `save_to_disk` Dataset folder, in `state.json`'s order."""
    state_path = folder / "state.json"
    try:
        state = json.loads(state_path.read_text("utf-8"))
        names = [entry["filename"] for entry in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TraceError(
            f"{state_path}: not the state.json of a saved Hugging Face dataset ({exc}); save it again with `save_to_disk`"
        ) from None
    files = [folder / name for name in names]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise TraceError(
            f"{folder}: state.json lists {missing[0]}, which is missing; copy the whole folder `save_to_disk` wrote"
        )
    return files


def _dataset_dict_files(folder: Path) -> list[Path]:
    """The Arrow files of every split of a `save_to_disk` DatasetDict, splits in its order."""
    path = folder / "dataset_dict.json"
    try:
        splits = json.loads(path.read_text("utf-8"))["splits"]
        if not isinstance(splits, list) or not all(isinstance(s, str) for s in splits):
            raise TypeError("splits must be a list of names")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TraceError(
            f"{path}: not the dataset_dict.json of a saved Hugging Face DatasetDict ({exc}); save it again with `save_to_disk`"
        ) from None
    return [f for split in splits for f in _save_to_disk_files(folder / split)]


def _data_files(folder: Path) -> list[Path]:
    """Data files below `folder` in path order; hidden folders, metadata and shard folders (an
    `--out` inside the input folder) left out."""
    found = []
    for root, dirs, names in os.walk(folder):  # linked files are read, linked folders not (no loops)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (Path(root) / d / _SHARD_MARK).is_file())
        for name in names:
            path = Path(root) / name
            if not name.startswith(".") and is_data_file(path):
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def folder_kind(folder: Path) -> str | None:
    """What kind of trace input `folder` is, or None if it holds no trace data at all."""
    if (folder / "dataset_dict.json").is_file():
        return "a Hugging Face DatasetDict saved with save_to_disk"
    if (folder / "state.json").is_file() and (folder / "dataset_info.json").is_file():
        return "a Hugging Face dataset saved with save_to_disk"
    if (folder / "snapshots").is_dir() and folder.name.startswith(("datasets--", "models--")):
        return "a Hugging Face cache folder"
    try:
        has_data = not (folder / _SHARD_MARK).is_file() and bool(_data_files(folder))
    except OSError:
        has_data = False
    return "a folder of trace files" if has_data else None


def _folder_files(folder: Path, spec: str) -> list[Path]:
    if (folder / _SHARD_MARK).is_file():
        raise TraceError(
            f"{spec}: a shard folder (it has {_SHARD_MARK}), already built; replay it, or write it back out "
            f"as trace data with `trajbench traces export {spec} --out FILE.jsonl`"
        )
    if (folder / "dataset_dict.json").is_file():
        return _dataset_dict_files(folder)
    if (folder / "state.json").is_file() and (folder / "dataset_info.json").is_file():
        return _save_to_disk_files(folder)
    cached = repo_cache_snapshot(folder)
    if cached is not None:
        return _folder_files(cached, spec)
    data = folder / "data"
    files = _data_files(data) if data.is_dir() else []
    if not files:
        files = _data_files(folder)
    if not files:
        raise TraceError(
            f"{spec}: holds no trace files ({', '.join(DATA_SUFFIXES)}) and is not a Hugging Face dataset folder; "
            "pass a file, a folder of them, or a folder written by `save_to_disk` (docs/dataset-format.md)"
        )
    return files


def resolve_input(spec: str) -> list[str]:
    """The files `spec` stands for, in reading order; raises `TraceError` for an input that is
    none of the kinds."""
    text = str(spec)
    if text.startswith(PREFIX):
        return [str(f) for f in _folder_files(snapshot(text[len(PREFIX) :], "dataset"), text)]
    path = Path(text)
    if path.is_dir():
        return [str(f) for f in _folder_files(path, text)]
    if not path.exists() and not path.is_symlink():
        hub = is_hub_id(text) and not text.startswith((".", "/"))
        hint = f"; for a Hub dataset in the local cache write {PREFIX}{text}" if hub else ""
        raise TraceError(f"{text}: no such file; check the path{hint}")
    if path.is_fifo() or path.is_socket():
        # Opening a named pipe blocks until a writer comes, and a file's kind is told from its
        # first bytes before it is read again from the start: a stream cannot be an input.
        raise TraceError(
            f"{text}: a named pipe or socket, not a file; inputs are read more than once, "
            "so save the data to a file first and pass that"
        )
    return [text]


def expand_inputs(specs: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Every file to read for `specs`, in order (see the module's rules)."""
    return [f for spec in specs for f in resolve_input(str(spec))]
