"""traces: agent traces → validated trajectories → salted, deterministic per-turn prompt shards.

The front door of the package: every other package imports what it needs of traces from here
(or from the front doors of its rooms: `traces.tokenizers`, `traces.analysis`, `traces.synth`,
and `traces.png`, the one way charts are drawn and saved). The data cards pull in matplotlib,
so they load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .build import BuildOptions, BuildResult, build_shards
from .canonical import MessagesHasher, canonical_json, content_line, messages_sha256, sha256_file, sha256_text
from .contract import ContractError, JsonFile, from_json, to_json
from .distribution import PERCENTILES, Distribution, distribution, pct_key, percentiles
from .errors import ShardError, TraceError, TraceFormatError, TraceValidationErrors, error_count, error_lines
from .export import ExportResult, export_jsonl, export_shards
from .formats import FORMATS, Format
from .io import iter_json_objects, iter_lines
from .layout import MANIFEST, STATS_FILE
from .manifest import FORMAT_VERSION, InstanceEntry, Manifest
from .model import Row, Trajectory, content_text, domain_of
from .outdir import check_writable, make_dir
from .profilefile import check_profile, profile_text, read_profile_file, write_profile_file
from .profiles import (
    PROFILES_ENV,
    Profile,
    ProfileError,
    Thresholds,
    add_profile_files,
    get_profile,
    profile_from,
    profiles,
)
from .progress import PLAIN_SECONDS, PROGRESS_MODES, PROGRESS_SECONDS_ENV, Progress, plain_seconds
from .prompts import PromptBuilder, wire_messages
from .publish import REGISTRY_ENV, HashRegistry, Release, publish, registered_hash, registry_path
from .request import request_body
from .salt import SALT_MODES, Salt, make_salt
from .shards import Instance, Shards, TurnPrompt, TurnRow, iter_prompts, logical_id, salt_for
from .show import shards_profile, turn_body
from .sizes import format_size, parse_size
from .sources import read_sources, validate_sources
from .verify import Verification, verify_shards
from .version import __version__

if TYPE_CHECKING:
    from .cards import check_card, parse_card, write_card

_LAZY = {"check_card": ".cards", "parse_card": ".cards", "write_card": ".cards"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMATS",
    "FORMAT_VERSION",
    "MANIFEST",
    "PERCENTILES",
    "PLAIN_SECONDS",
    "PROFILES_ENV",
    "PROGRESS_MODES",
    "PROGRESS_SECONDS_ENV",
    "REGISTRY_ENV",
    "SALT_MODES",
    "STATS_FILE",
    "BuildOptions",
    "BuildResult",
    "ContractError",
    "Distribution",
    "ExportResult",
    "Format",
    "HashRegistry",
    "Instance",
    "InstanceEntry",
    "JsonFile",
    "Manifest",
    "MessagesHasher",
    "Profile",
    "ProfileError",
    "Progress",
    "PromptBuilder",
    "Release",
    "Row",
    "Salt",
    "ShardError",
    "Shards",
    "Thresholds",
    "TraceError",
    "TraceFormatError",
    "TraceValidationErrors",
    "Trajectory",
    "TurnPrompt",
    "TurnRow",
    "Verification",
    "__version__",
    "add_profile_files",
    "build_shards",
    "canonical_json",
    "check_card",
    "check_profile",
    "check_writable",
    "content_line",
    "content_text",
    "distribution",
    "domain_of",
    "error_count",
    "error_lines",
    "export_jsonl",
    "export_shards",
    "format_size",
    "from_json",
    "get_profile",
    "iter_json_objects",
    "iter_lines",
    "iter_prompts",
    "logical_id",
    "make_dir",
    "make_salt",
    "messages_sha256",
    "parse_card",
    "parse_size",
    "pct_key",
    "percentiles",
    "plain_seconds",
    "profile_from",
    "profile_text",
    "profiles",
    "publish",
    "read_profile_file",
    "read_sources",
    "registered_hash",
    "registry_path",
    "request_body",
    "salt_for",
    "sha256_file",
    "sha256_text",
    "shards_profile",
    "to_json",
    "turn_body",
    "validate_sources",
    "verify_shards",
    "wire_messages",
    "write_card",
    "write_profile_file",
]
