"""The file names of a shard folder and of its statistics: spelled here and nowhere else."""

from __future__ import annotations

MANIFEST = "manifest.json"
STATS_FILE = "stats.json"


def shard_file(name: str, k: int, total: int) -> str:
    """The k-th of `total` shard files of dataset `name`: `<name>-0000k-of-0000N.parquet`."""
    return f"{name}-{k:05d}-of-{total:05d}.parquet"
