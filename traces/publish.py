"""`traces publish`: a release folder for a model's dataset, and the official-hash registry.

A release is what a maintainer uploads and a submitter downloads (docs/maintainers.md): the
shards and their manifest, the data card as the folder's `README.md` with the Hugging Face
dataset-card front matter (`configs:` naming the Parquet files, so `datasets.load_dataset(DIR)`
opens it and the Hub displays it), the profile it was made for, and `registry.json`, the
entry that makes its content hash the official one for that profile.

The folder is written in a temporary sibling and renamed into place, so a failed publish leaves
nothing half-written. The shards are verified (files and rows) after the copy: the hash the
registry names is the one of the files in the folder.

The registry: the package's `eval/data/official.json` holds the hashes of the built-in profiles
(changing it is a reviewed change to trajbench); a user profile's hash goes into a user registry
file of the same shape (`--registry FILE` or `TRAJBENCH_REGISTRY`), which `eval check` reads.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .contract import ContractError, from_json, to_json
from .env import REGISTRY_ENV
from .errors import TraceError
from .outdir import check_writable, unwritable
from .profiles import Profile, profile_text
from .progress import Progress
from .shards import MANIFEST, Shards, uses_tokenizer, verify_shards

#: The registry entry inside a release folder, and the release's profile file.
REGISTRY_ENTRY = "registry.json"
PROFILE_FILE = "profile.yaml"
CARD_FILE = "README.md"


@dataclass(frozen=True)
class HashRegistry:
    """An official-hash registry: profile name → the manifest content hash of its dataset
    (null: not published yet). The shape of the package's eval/data/official.json."""

    version: int
    description: str
    content_hashes: dict[str, str | None]

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> HashRegistry:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TraceError(
                f"{p}: no such registry file; check the path, or create it with `trajbench traces publish --registry {p}`"
            ) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TraceError(f"{p}: not a registry file ({exc}); it holds JSON like eval/data/official.json") from None
        try:
            return from_json(cls, data, str(p))
        except ContractError as exc:
            raise TraceError(f"{exc}; a registry file has version, description and content_hashes") from None

    def with_entry(self, name: str, content_hash: str) -> HashRegistry:
        return HashRegistry(
            self.version, self.description, dict(sorted({**self.content_hashes, name: content_hash}.items()))
        )

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Atomic and deterministic (sorted names, fixed indentation)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(to_json(self), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, p)
        return p


def empty_registry() -> HashRegistry:
    return HashRegistry(
        1,
        "Manifest content hashes of published datasets, per user model profile (trajbench traces publish; "
        "docs/maintainers.md). Not official: only the package's eval/data/official.json is.",
        {},
    )


def registry_path(given: str | os.PathLike[str] | None) -> Path | None:
    """The user registry in effect: `given`, else `TRAJBENCH_REGISTRY`, else none."""
    if given is not None:
        return Path(given)
    env = os.environ.get(REGISTRY_ENV)
    return Path(env) if env else None


def registered_hash(path: str | os.PathLike[str] | None, name: str) -> str | None:
    """The hash a user registry names for profile `name` (None: no registry, or no entry)."""
    p = registry_path(path)
    if p is None:
        return None
    return HashRegistry.read(p).content_hashes.get(name)


@dataclass(frozen=True)
class Release:
    folder: Path
    name: str
    profile: str
    content_hash: str
    files: tuple[str, ...]
    registry: Path | None  # the user registry the entry was added to, if any


def card_front_matter(profile: Profile, dataset: str, shard_files: list[str]) -> dict[str, Any]:
    """What the Hugging Face Hub and `datasets` read from a card besides trajbench's own keys:
    `configs` (one config, one split, the Parquet shards), `pretty_name`, `tags`."""
    return {
        "pretty_name": f"{dataset} ({profile.name})",
        "tags": ["trajbench", "agentic", "mlperf"],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": sorted(shard_files)}]}],
        "profile": {"name": profile.name, "content_hash": profile.content_hash(), "built_in": profile.built_in},
    }


def publish(
    shards_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    profile: Profile,
    *,
    registry: str | os.PathLike[str] | None = None,
    version: str = "1",
    license: str = "unknown",
    summary: str | None = None,
    build: tuple[str, ...] = (),
    tokenizer: Any | None = None,
    card_options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> Release:
    """Write the release folder `out` (which must not exist) and, for a user profile with a
    registry, add its hash there. A built-in profile's hash is official only once it is in the
    package's eval/data/official.json: its release folder's registry.json is the entry to add."""
    from .analysis import StatsOptions
    from .cards import write_card

    dest = Path(out)
    if dest.exists():
        raise TraceError(f"{dest}: already exists; a release is never overwritten: choose a new --out (e.g. NAME-v2)")
    reg = registry_path(registry)
    if reg is not None and profile.built_in:
        raise TraceError(
            f"profile {profile.name} is built in: its official hash lives in the package's eval/data/official.json, "
            f"not in a user registry; drop --registry (and {REGISTRY_ENV})"
        )
    check_writable(dest)
    shards = Shards(Path(shards_dir))
    manifest = shards.manifest
    # the registry is read (and its place checked) before anything is written, so a bad registry
    # leaves no release behind that a retry would find in the way
    current = None
    if reg is not None:
        current = HashRegistry.read(reg) if reg.exists() else empty_registry()
        check_writable(reg.parent, option="--registry")
        known = current.content_hashes.get(profile.name)
        if known is not None and known != manifest.content_hash:
            raise TraceError(
                f"{reg}: profile {profile.name} is already registered with dataset {known[:16]}…, not this one "
                f"({manifest.content_hash[:16]}…); runs were checked against it: publish the new dataset under a "
                "new profile name (e.g. NAME-v2), or edit the registry by hand if the old one is withdrawn"
            )
    tok = manifest.tokenizer
    if tok is not None and not uses_tokenizer(profile, tok.name):
        raise TraceError(
            f"{shards.path}: the token columns were counted with {tok.name}, profile {profile.name} uses "
            f"{profile.tokenizer}; rebuild the shards for it (`trajbench traces build … --profile {profile.name}`)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)  # left by a killed publish of the same process id
    tmp.mkdir()  # not mkdtemp: the release keeps the umask's permissions, not 0700
    try:
        files = [s.file for s in manifest.shards]
        for f in [*files, MANIFEST]:
            shutil.copyfile(shards.path / f, tmp / f)
        checked = verify_shards(Shards(tmp), content=True)
        content_hash = checked.content_hash or manifest.content_hash
        opts = StatsOptions(**dict(card_options or {}))
        write_card(
            tmp,
            tmp / CARD_FILE,
            version=version,
            license=license,
            summary=summary,
            build=build,
            tokenizer=tokenizer,
            options=opts,
            progress=progress,
            extra=card_front_matter(profile, manifest.name, files),
        )
        (tmp / PROFILE_FILE).write_text(profile_text([profile]), encoding="utf-8")
        entry = empty_registry().with_entry(profile.name, content_hash)
        entry.write(tmp / REGISTRY_ENTRY)
        written = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        os.replace(tmp, dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise unwritable(dest, exc) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if reg is not None and current is not None:
        try:
            current.with_entry(profile.name, content_hash).write(reg)
        except OSError as exc:
            shutil.rmtree(dest, ignore_errors=True)  # unregistered, the release would block a retry
            raise unwritable(reg, exc, option="--registry") from None
    return Release(dest, manifest.name, profile.name, content_hash, tuple(written), reg)
