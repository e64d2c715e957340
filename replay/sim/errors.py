"""The simulator's one error family: it stands alone (a server imports nothing of the client),
so it has its own base error, which `cli.main` prints like every other package's."""

from __future__ import annotations


class SimError(Exception):
    """Base error of the simulated endpoint: bad settings, a failed start, an oracle miss."""
