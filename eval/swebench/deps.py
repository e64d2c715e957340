"""Lazy access to the optional extra `trajbench[swebench]` (mini-swe-agent and the swebench harness).

`import eval` must work without the extra, so nothing here imports either package at module
level; `require()` is called by the runner right before it needs them.
"""

from __future__ import annotations

import importlib.util
import os
from importlib import metadata

from .errors import SwebenchError

INSTALL_HINT = "pip install 'trajbench[swebench]'"

# import name -> distribution name
_PACKAGES = {"minisweagent": "mini-swe-agent", "swebench": "swebench"}


def require() -> None:
    """Fail with the install hint when the extra is missing; make the packages quiet and offline."""
    missing = [dist for mod, dist in _PACKAGES.items() if importlib.util.find_spec(mod) is None]
    if missing:
        raise SwebenchError(f"the SWE-bench runner needs {' and '.join(missing)}: {INSTALL_HINT}")
    # litellm fetches its model price table from GitHub at import unless told to use its bundled
    # copy (no hub or internet access is allowed); mini-swe-agent prints a banner on import and
    # refuses unknown models unless cost tracking errors are ignored (local endpoints have no price).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")


def versions() -> dict[str, str]:
    """Installed versions of the extra's packages, recorded in every summary."""
    out: dict[str, str] = {}
    for dist in _PACKAGES.values():
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out
