"""traces: agent traces → validated trajectories → salted, deterministic per-turn prompt shards.

The front door of the package: every other package imports what it needs of traces from here
(or from the front doors of its rooms: `traces.tokenizers`, `traces.analysis`, `traces.synth`,
and `traces.png`, the one way charts are drawn and saved). What needs pyarrow, numpy, YAML or
the trace formats (shards, inputs, formats, statistics, profiles, publishing, data cards) loads on
first use, so a command, the simulator's process and the worker processes import only what they
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .canonical import MessagesHasher, canonical_json, content_line, messages_sha256, sha256_file, sha256_text
from .contract import ContractError, JsonFile, from_json, to_json
from .env import PROFILES_ENV, REGISTRY_ENV
from .errors import ShardError, TraceError, TraceFormatError, TraceValidationErrors, error_count, error_lines
from .lazy import lazy_getattr
from .model import Row, Trajectory, content_text, domain_of
from .option import Option, Values, declare, declared, options_of
from .outdir import check_writable, make_dir, replace_dir, sweep_stale, temp_sibling
from .progress import PLAIN_SECONDS, PROGRESS_MODES, PROGRESS_OPTION, PROGRESS_SECONDS_ENV, Progress, plain_seconds
from .sizes import format_size, parse_size
from .text import TEXT_WIDTH, field_lines, format_count, format_number

if TYPE_CHECKING:
    from .cards import check_card, parse_card, write_card
    from .distribution import PERCENTILES, Distribution, distribution, pct_key, percentiles
    from .docs import DOCS_PACKAGE, Page, page, pages
    from .formats import FORMATS, Format, read_sources, validate_sources
    from .inputs import iter_json_objects, iter_lines
    from .profiles import (
        DEFAULT_OUTPUT_CONSISTENCY,
        Profile,
        ProfileError,
        Thresholds,
        add_profile_files,
        check_profile,
        get_profile,
        profile_from,
        profile_lines,
        profile_text,
        profiles,
        read_profile_file,
        write_profile_file,
    )
    from .publish import HashRegistry, Release, publish, registered_hash, registry_path
    from .requests import SALT_MODES, BodyEncoder, PromptBuilder, Salt, make_salt, request_body, wire_messages
    from .shards import (
        FORMAT_VERSION,
        MANIFEST,
        STATS_FILE,
        BuildOptions,
        BuildResult,
        ExportResult,
        Instance,
        InstanceEntry,
        Manifest,
        Shards,
        TurnPrompt,
        TurnRow,
        Verification,
        build_shards,
        export_shards,
        iter_prompts,
        logical_id,
        salt_for,
        shards_profile,
        turn_body,
        verify_shards,
        without_marker,
    )
    from .version import __version__


__all__ = [
    "DEFAULT_OUTPUT_CONSISTENCY",
    "DOCS_PACKAGE",
    "FORMATS",
    "FORMAT_VERSION",
    "MANIFEST",
    "PERCENTILES",
    "PLAIN_SECONDS",
    "PROFILES_ENV",
    "PROGRESS_MODES",
    "PROGRESS_OPTION",
    "PROGRESS_SECONDS_ENV",
    "REGISTRY_ENV",
    "SALT_MODES",
    "STATS_FILE",
    "TEXT_WIDTH",
    "BodyEncoder",
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
    "Option",
    "Page",
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
    "Values",
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
    "declare",
    "declared",
    "distribution",
    "domain_of",
    "error_count",
    "error_lines",
    "export_shards",
    "field_lines",
    "format_count",
    "format_number",
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
    "options_of",
    "page",
    "pages",
    "parse_card",
    "parse_size",
    "pct_key",
    "percentiles",
    "plain_seconds",
    "profile_from",
    "profile_lines",
    "profile_text",
    "profiles",
    "publish",
    "read_profile_file",
    "read_sources",
    "registered_hash",
    "registry_path",
    "replace_dir",
    "request_body",
    "salt_for",
    "sha256_file",
    "sha256_text",
    "shards_profile",
    "sweep_stale",
    "temp_sibling",
    "to_json",
    "turn_body",
    "validate_sources",
    "verify_shards",
    "wire_messages",
    "without_marker",
    "write_card",
    "write_profile_file",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".cards": ("check_card", "parse_card", "write_card"),
    ".distribution": ("PERCENTILES", "Distribution", "distribution", "pct_key", "percentiles"),
    ".docs": ("DOCS_PACKAGE", "Page", "page", "pages"),
    ".formats": ("FORMATS", "Format", "read_sources", "validate_sources"),
    ".inputs": ("iter_json_objects", "iter_lines"),
    ".profiles": (
        "DEFAULT_OUTPUT_CONSISTENCY",
        "Profile",
        "ProfileError",
        "Thresholds",
        "add_profile_files",
        "check_profile",
        "get_profile",
        "profile_from",
        "profile_lines",
        "profile_text",
        "profiles",
        "read_profile_file",
        "write_profile_file",
    ),
    ".publish": ("HashRegistry", "Release", "publish", "registered_hash", "registry_path"),
    ".requests": ("SALT_MODES", "BodyEncoder", "PromptBuilder", "Salt", "make_salt", "request_body", "wire_messages"),
    ".shards": (
        "FORMAT_VERSION",
        "MANIFEST",
        "STATS_FILE",
        "BuildOptions",
        "BuildResult",
        "ExportResult",
        "Instance",
        "InstanceEntry",
        "Manifest",
        "Shards",
        "TurnPrompt",
        "TurnRow",
        "Verification",
        "build_shards",
        "export_shards",
        "iter_prompts",
        "logical_id",
        "salt_for",
        "shards_profile",
        "turn_body",
        "verify_shards",
        "without_marker",
    ),
    ".version": ("__version__",),  # the package metadata (importlib.metadata): read when asked
}
__getattr__ = lazy_getattr(__name__, _LAZY)
