"""One turn's request as the wire carries it: the messages of turn t rebuilt from the deltas, the
salt that isolates trajectories and repeats (docs/salting.md), the history marker that stops reuse
of generated tokens, and the body with the profile's parameters.
"""

from __future__ import annotations

from .body import BodyEncoder, request_body
from .marker import Marker, choose
from .prompts import PromptBuilder, wire_messages
from .salt import SALT_MODES, Salt, make_salt

__all__ = [
    "SALT_MODES",
    "BodyEncoder",
    "Marker",
    "PromptBuilder",
    "Salt",
    "choose",
    "make_salt",
    "request_body",
    "wire_messages",
]
