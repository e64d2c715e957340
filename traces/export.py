"""`traces export`: shards back to the official flat rows (the inverse of `traces build`).

Shards keep each turn's recorded rows verbatim, so exporting one repeat reproduces the source
conversations: system and tools go on the first row (and tools again wherever they changed), and
the answer after the last client turn is taken from that turn's ground truth.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .canonical import canonical_json
from .errors import TraceError
from .io import open_text_writer
from .shards import Instance, Shards


def instance_flat_rows(instance: Instance) -> Iterator[dict[str, Any]]:
    for k, turn in enumerate(instance.turns):
        delta = turn.delta
        for j, flat in enumerate(delta):
            row = {"conversation_id": instance.trajectory_id, **flat}
            is_client_row = j == len(delta) - 1
            if k == 0 and j == 0 and turn.system is not None:
                row["system"] = turn.system
            if is_client_row and turn.tools_json is not None:
                row["tools"] = json.loads(turn.tools_json)
            yield row
    last = instance.turns[-1]
    if last.expected_json is not None:
        yield {"conversation_id": instance.trajectory_id, **json.loads(last.expected_json)}


def export_jsonl(shards_dir: str, out: str, *, repeat: int = 1) -> int:
    """Write the instances of one repeat as mlperf-jsonl; returns rows written."""
    shards = Shards(shards_dir)
    n = 0
    with open_text_writer(out) as fh:
        for k, entry in enumerate(shards.index):
            if entry.repeat != repeat:
                continue
            for row in instance_flat_rows(shards.instance(k)):
                fh.write(canonical_json(row))
                fh.write("\n")
                n += 1
    if n == 0:
        raise TraceError(f"{shards_dir}: holds no instances of repeat {repeat}")
    return n
