"""`traces.Progress`, the one status line of every long step: what the line says, how it fits a
narrow terminal, and when the plain mode writes (every interval, never for a quick step)."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

import traces
from traces import progress as progress_module


class Clock:
    """A monotonic clock the test moves by hand, so elapsed time and ETA are exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(progress_module, "time", c)
    return c


def _rich(p: traces.Progress, width: int) -> str:
    out = io.StringIO()
    Console(width=width, file=out, force_terminal=False).print(p)
    return out.getvalue()


def test_line_has_count_extras_elapsed_and_eta(clock: Clock) -> None:
    p = traces.Progress("replay", total=30_335, extras=lambda: ["42 tok/s", "errors 0"], mode="none")
    clock.now += 65
    p.advance(1_234)
    # 65 s for 1,234 turns: the 29,101 left take 1,532.9 s more
    assert p.line() == "replay  1,234/30,335 turns  42 tok/s  errors 0  elapsed 0:01:05  eta 0:25:32"


def test_unknown_total_shows_the_rate_and_no_eta(clock: Clock) -> None:
    p = traces.Progress("build", mode="none")
    clock.now += 10
    p.advance(5_000)
    assert p.line() == "build  5,000 turns  elapsed 0:00:10  500 turns/s"
    p.set_total(20_000)
    assert p.line().endswith("eta 0:00:30")


def test_a_stage_has_its_own_count_and_eta_while_elapsed_runs_on(clock: Clock) -> None:
    p = traces.Progress("stats", total=100, mode="none")
    clock.now += 60
    p.advance(100)
    p.stage("stats LRU", total=4, unit="cache sizes")
    clock.now += 10
    p.advance(1)
    assert p.line() == "stats LRU  1/4 cache sizes  elapsed 0:01:10  eta 0:00:30"


def test_eighty_columns_keep_count_elapsed_and_eta(clock: Clock) -> None:
    extras = ["errors 3", "1,234 tok/s", "aborted 2", "12 active 4 waiting /16", "window open"]
    p = traces.Progress("replay", total=30_335, extras=lambda: extras, mode="none")
    clock.now += 3_725
    p.advance(12_345)
    text = _rich(p, 80)
    assert text.count("\n") == 1 and len(text.rstrip("\n")) <= 80, text
    for piece in ("replay", "12,345/30,335 turns", "elapsed 1:02:05", "eta 1:30:28", "errors 3"):
        assert piece in text, text
    assert "window open" not in text and "…" not in text  # what does not fit is left out whole
    wide = _rich(p, 200)
    assert "window open" in wide and "━" in wide  # with room, every extra and the bar


def test_a_failing_extra_shows_the_line_without_extras(clock: Clock) -> None:
    def broken() -> list[str]:
        raise RuntimeError("dictionary changed size during iteration")

    p = traces.Progress("replay", total=10, extras=broken, mode="none")
    assert p.line() == "replay  0/10 turns  elapsed 0:00:00"


def test_plain_mode_writes_every_interval_while_the_step_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(traces.PROGRESS_SECONDS_ENV, "0.05")
    out = io.StringIO()
    with traces.Progress("synth", total=100, mode="plain", stream=out) as p:
        p.advance(40)
        deadline = time.monotonic() + 10
        while "synth  40/100 turns" not in out.getvalue():  # written by the thread, mid-step
            assert time.monotonic() < deadline, "no status line within 10 s"
            time.sleep(0.01)
        p.advance(60)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("synth  100/100 turns  elapsed ")  # and the last word at the end
    assert all(line.startswith("synth  ") for line in lines)


def test_a_quick_step_and_mode_none_write_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(traces.PROGRESS_SECONDS_ENV, "0.01")
    quiet = io.StringIO()
    with traces.Progress("build", total=10, mode="none", stream=quiet) as p:
        p.advance(10)
        time.sleep(0.1)
    assert quiet.getvalue() == ""
    monkeypatch.delenv(traces.PROGRESS_SECONDS_ENV)
    quick = io.StringIO()
    with traces.Progress("build", total=10, mode="plain", stream=quick) as p:
        p.advance(10)
    assert quick.getvalue() == ""  # shorter than the interval: nothing to follow


def test_auto_is_plain_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(traces.PROGRESS_SECONDS_ENV, "0.02")
    out = io.StringIO()  # not a terminal
    with traces.Progress("stats", total=5, stream=out) as p:
        deadline = time.monotonic() + 10
        while "stats  0/5 turns" not in out.getvalue():  # written by the thread, mid-step
            assert time.monotonic() < deadline, "no status line within 10 s"
            time.sleep(0.01)
        p.advance(5)
    assert "\x1b[" not in out.getvalue()


def test_a_bad_interval_or_mode_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(traces.PROGRESS_SECONDS_ENV, "soon")
    with pytest.raises(traces.TraceError, match="TRAJBENCH_PROGRESS_SECONDS='soon': not a number of seconds"):
        traces.Progress("x", mode="plain", stream=io.StringIO()).start()
    with pytest.raises(traces.TraceError, match="choose one of auto, rich, plain, none"):
        traces.Progress("x", mode="loud")
