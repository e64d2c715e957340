"""Model profiles: the sampling parameters, served model name and gates of each model (built in,
or loaded from a user's profile file, docs/maintainers.md).
"""

from __future__ import annotations

from ..env import PROFILES_ENV
from .listing import profile_lines
from .profilefile import check_profile, profile_text, read_profile_file, write_profile_file
from .registry import (
    DEFAULT_OUTPUT_CONSISTENCY,
    Profile,
    ProfileError,
    Thresholds,
    add_profile_files,
    get_profile,
    profile_from,
    profiles,
)

__all__ = [
    "DEFAULT_OUTPUT_CONSISTENCY",
    "PROFILES_ENV",
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
]
