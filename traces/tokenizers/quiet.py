"""Importing transformers without its notice that no deep-learning framework is installed.

trajbench uses transformers for tokenizers and chat templates only, never for a model, so
"PyTorch was not found. Models won't be available …" (older versions: "None of PyTorch,
TensorFlow >= 2.0, or Flax have been found …"), which transformers logs on import, is noise on
every command that loads a Hugging Face tokenizer. A filter on the `transformers` logger drops
exactly those records; every other warning of transformers is still shown.
"""

from __future__ import annotations

import logging

#: The starts of the notices dropped (current and older transformers).
NOTICES = ("PyTorch was not found", "None of PyTorch, TensorFlow")


class _NoBackendNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(NOTICES)


_FILTER = _NoBackendNotice()


def quiet_backend_notice() -> None:
    """Install the filter (once) before transformers is first imported."""
    logger = logging.getLogger("transformers")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
