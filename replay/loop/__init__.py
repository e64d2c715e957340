"""The closed loop: slots that send each trajectory's turns in order (scheduler), the window and
the FIFO of instances (coordinator), and where the slots run: in-process, worker processes or Ray
actors (docs/ray.md); plus the open-file limit and signal handling a run needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traces.lazy import lazy_getattr

from .backend import Backend, LocalBackend, load_counter, open_client
from .coordinator import Coordinator
from .interrupt import Interrupt
from .limits import ensure_open_files
from .scheduler import WorkerPlan, max_stored_repeat
from .workers import ProcessBackend

if TYPE_CHECKING:
    from .raybackend import RayBackend, import_ray


__all__ = [
    "Backend",
    "Coordinator",
    "Interrupt",
    "LocalBackend",
    "ProcessBackend",
    "RayBackend",
    "WorkerPlan",
    "ensure_open_files",
    "import_ray",
    "load_counter",
    "max_stored_repeat",
    "open_client",
]

_LAZY = {  # submodule: the names it gives, imported on first use
    ".raybackend": ("RayBackend", "import_ray"),
}
__getattr__ = lazy_getattr(__name__, _LAZY)
