"""The environment variables trajbench reads for its user files, named in one place.

Light on purpose: the command line cites them in its help, which must not load what reads the
files (YAML profiles, the official-hash registry beside the shards).
"""

from __future__ import annotations

#: The folder (or file) of user profiles every command loads besides the built-ins.
PROFILES_ENV = "TRAJBENCH_PROFILES"
#: The user registry file every command reads when no --registry is given.
REGISTRY_ENV = "TRAJBENCH_REGISTRY"
