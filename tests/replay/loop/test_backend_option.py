"""`--backend`: how a run picks where its workers run, and the Ray backend's pure parts (the
clock mapping and the missing-extra error), which need no cluster (docs/ray.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from records import record

import cli
from replay import ReplayError
from replay.config import RunConfig
from replay.loop.raybackend import WorkerClock, clock_sample, shift_record


def test_backend_ray_without_ray_names_the_extra(
    sample_shards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as when not installed
    with pytest.raises(SystemExit) as ended:
        cli.main(["replay", "run", str(sample_shards), "--backend", "ray", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert ended.value.code == 1 and "Traceback" not in err
    assert "pip install 'trajbench[ray]'" in err and "docs/ray.md" in err
    assert not (tmp_path / "r").exists()  # told before anything started


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"backend": "threads"}, "--backend 'threads': choose one of auto, process, ray"),
        ({"min_workers": 2, "workers": 2, "concurrency": 2}, "apply to --backend ray only"),
        ({"ray_address": "10.0.0.1:6379"}, "--ray-address, --ray-resource and --min-workers apply"),
        ({"backend": "ray", "workers": 2, "concurrency": 2, "min_workers": 3}, "--min-workers must be between 1"),
    ],
)
def test_backend_options_are_checked(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ReplayError, match=message):
        RunConfig(shards="s", **kw).check()  # type: ignore[arg-type]


def test_the_clock_offset_is_the_round_trip_midpoint_of_the_shortest_round_trip() -> None:
    # the worker's clock runs 1 000 000 ns ahead; round trips of 40 and 10 µs
    clock = WorkerClock()
    clock.check([clock_sample(0, 1_000_030, 40_000), clock_sample(100_000, 1_105_004, 110_000)])
    assert clock.current is not None
    assert (clock.current.offset_ns, clock.current.uncertainty_ns) == (1_000_004, 5_000)
    assert clock.to_driver(1_500_000) == 499_996


def test_a_record_moves_to_the_driver_clock_as_one_block() -> None:
    rec = record(t_send_ns=1000, t_first_ns=1500, t_last_ns=1900, chunk_ns=(1500, 1700, 1900))
    moved = shift_record(rec, -1000)
    assert (moved.t_send_ns, moved.t_first_ns, moved.t_last_ns, moved.chunk_ns) == (0, 500, 900, (500, 700, 900))
