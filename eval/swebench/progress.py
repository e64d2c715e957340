"""Progress of a SWE-bench run: agent and grading counts, as a rich bar or not at all.

The runner calls a `Reporter` from its worker threads; `RichReporter` is the CLI's, `Reporter`
itself reports nothing (library use, tests).
"""

from __future__ import annotations

import threading
from types import TracebackType

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class Reporter:
    """Silent progress sink; subclasses show it."""

    def start(self, agent_total: int, grade_total: int) -> None:
        pass

    def agent_done(self, instance_id: str, exit_status: str) -> None:
        pass

    def graded(self, instance_id: str, status: str) -> None:
        pass

    def add_to_grade(self, n: int) -> None:
        """`n` more instances will be graded (their agents finished in this run)."""


class RichReporter(Reporter):
    """Two bars, `agent` and `grading`, with resolved/unresolved/incomplete counts."""

    def __init__(self, *, disable: bool = False) -> None:
        self._progress = Progress(
            TextColumn("{task.description:8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            disable=disable,
        )
        self._lock = threading.Lock()
        self._agent: TaskID | None = None
        self._grade: TaskID | None = None
        self._agent_counts: dict[str, int] = {}
        self._grade_counts: dict[str, int] = {}

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def start(self, agent_total: int, grade_total: int) -> None:
        self._agent = self._progress.add_task("agent", total=agent_total, info="")
        self._grade = self._progress.add_task("grading", total=grade_total, info="")

    def agent_done(self, instance_id: str, exit_status: str) -> None:
        with self._lock:
            self._agent_counts[exit_status] = self._agent_counts.get(exit_status, 0) + 1
            info = " ".join(f"{k}:{v}" for k, v in sorted(self._agent_counts.items()))
            if self._agent is not None:
                self._progress.update(self._agent, advance=1, info=info)

    def graded(self, instance_id: str, status: str) -> None:
        with self._lock:
            self._grade_counts[status] = self._grade_counts.get(status, 0) + 1
            info = " ".join(f"{k}:{v}" for k, v in sorted(self._grade_counts.items()))
            if self._grade is not None:
                self._progress.update(self._grade, advance=1, info=info)

    def add_to_grade(self, n: int) -> None:
        with self._lock:
            if self._grade is not None:
                task = self._progress.tasks[self._grade]
                self._progress.update(self._grade, total=(task.total or 0) + n)
