"""Finding a Hugging Face Hub repository in the local cache, offline, and never downloading it.

`hf:org/name` (a dataset for `traces build`, a model for `--tokenizer hf:org/name`) names a
snapshot that `hf download` (or `datasets`/`transformers` on a machine with internet) left in
the cache: `<cache>/<datasets|models>--org--name/snapshots/<commit>/`, with `refs/<branch>`
holding the commit a branch points at. The cache is where huggingface_hub puts it, read from the
environment at call time: `HF_HUB_CACHE`, else `HUGGINGFACE_HUB_CACHE`, else `HF_HOME/hub`,
else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.

This is the whole of `HF_HUB_OFFLINE=1` that trajbench needs: nothing here opens a connection,
so a repository that is not in the cache is an error saying how to get it there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from ..errors import TraceError

RepoType = Literal["dataset", "model"]

#: `org/name` or `org/name@revision` (a branch, a tag or a commit).
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<rev>[\w./-]+))?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
PREFIX = "hf:"


def cache_dir() -> Path:
    """The Hub cache folder huggingface_hub would use with the current environment."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg).expanduser() / "huggingface" / "hub"


def is_hub_id(text: str) -> bool:
    return HUB_ID.match(text) is not None


def repo_folder_name(repo: str, kind: RepoType) -> str:
    """`datasets--org--name` / `models--org--name`: the cache's folder of a repository."""
    return f"{kind}s--" + repo.replace("/", "--")


def _download_hint(repo: str, kind: RepoType) -> str:
    if kind == "dataset":
        return f"hf download {repo} --repo-type dataset"
    # the tokenizer files and the chat template, not the weights
    return f'hf download {repo} --include "*.json" "*.jinja" "*.model" "*.txt"'


def snapshot(spec: str, kind: RepoType, cache: Path | None = None) -> Path:
    """The snapshot folder of `org/name[@revision]` in the local cache (`cache_dir()` unless
    given; default revision: main). Raises `TraceError` saying where it looked and how to bring
    the repository here."""
    m = HUB_ID.match(spec)
    if m is None:
        raise TraceError(
            f"{PREFIX}{spec}: not a Hub id; write {PREFIX}ORG/NAME or {PREFIX}ORG/NAME@REVISION (docs/dataset-format.md)"
        )
    repo, rev = m.group("repo"), m.group("rev")
    cache = cache or cache_dir()
    folder = cache / repo_folder_name(repo, kind)
    snapshots = folder / "snapshots"
    if not snapshots.is_dir():
        raise TraceError(
            f"{PREFIX}{spec}: the {kind} is not in the local Hugging Face cache (no {folder}); nothing is "
            f"downloaded here. On a machine with internet run `{_download_hint(repo, kind)}`, then copy its "
            f"cache folder {folder.name} into {cache} (or set HF_HUB_CACHE to the cache that holds it), "
            "or pass the downloaded folder itself"
        )
    ref = folder / "refs" / (rev or "main")
    if rev is not None and _COMMIT.match(rev):
        commit = rev
    elif ref.is_file():
        commit = ref.read_text("utf-8").strip()
    else:
        found = sorted(p.name for p in snapshots.iterdir() if p.is_dir())
        if rev is None and len(found) == 1:
            commit = found[0]
        else:
            have = ", ".join(found) or "none"
            raise TraceError(
                f"{PREFIX}{spec}: the cache has no ref {rev or 'main'} for {repo} (snapshots: {have}); "
                f"name one as {PREFIX}{repo}@COMMIT"
            )
    path = snapshots / commit
    if not path.is_dir():
        raise TraceError(
            f"{PREFIX}{spec}: {ref if ref.is_file() else 'the revision'} points at snapshot {commit}, which is not "
            f"in {snapshots}; download it again on a machine with internet (`{_download_hint(repo, kind)}`)"
        )
    return path


def repo_cache_snapshot(folder: Path) -> Path | None:
    """The `main` snapshot of a repository's cache folder (`…/datasets--org--name`) given as a
    path, else None when `folder` is not one."""
    if not (folder / "snapshots").is_dir() or not re.match(r"^(datasets|models)--", folder.name):
        return None
    kind: RepoType = "dataset" if folder.name.startswith("datasets--") else "model"
    repo = folder.name.split("--", 1)[1].replace("--", "/", 1)
    return snapshot(repo, kind, folder.parent)
