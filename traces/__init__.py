"""traces: agent traces → validated trajectories → salted, deterministic per-turn prompt shards."""

from __future__ import annotations

__version__ = "0.1.0"

from .build import BuildOptions, BuildResult, build_shards  # noqa: E402
from .canonical import MessagesHasher, canonical_json, messages_sha256, sha256_text  # noqa: E402
from .errors import ShardError, TraceError, TraceFormatError, TraceValidationErrors  # noqa: E402
from .formats import FORMATS  # noqa: E402
from .model import Row, Trajectory, domain_of  # noqa: E402
from .profiles import Profile, get_profile, profiles  # noqa: E402
from .prompts import PromptBuilder, wire_messages  # noqa: E402
from .request import request_body  # noqa: E402
from .salt import SALT_MODES, Salt, make_salt  # noqa: E402
from .shards import Instance, Shards, TurnPrompt, TurnRow, iter_prompts, logical_id, salt_for  # noqa: E402
from .sources import read_sources, validate_sources  # noqa: E402
from .verify import Verification, verify_shards  # noqa: E402

__all__ = sorted(
    [
        "BuildOptions",
        "BuildResult",
        "FORMATS",
        "Instance",
        "MessagesHasher",
        "Profile",
        "PromptBuilder",
        "Row",
        "SALT_MODES",
        "Salt",
        "ShardError",
        "Shards",
        "TraceError",
        "TraceFormatError",
        "TraceValidationErrors",
        "Trajectory",
        "TurnPrompt",
        "TurnRow",
        "Verification",
        "__version__",
        "build_shards",
        "canonical_json",
        "domain_of",
        "get_profile",
        "iter_prompts",
        "logical_id",
        "make_salt",
        "messages_sha256",
        "profiles",
        "read_sources",
        "request_body",
        "salt_for",
        "sha256_text",
        "validate_sources",
        "verify_shards",
    ]
)
