"""`traces build` with a tokenizer is the slowest step of the pipeline: its status line knows the
total from the start (a quick first pass counts the client turns), so it shows an ETA."""

from __future__ import annotations

from pathlib import Path

from evalruns import WordCounter

import traces

SAMPLE = Path(traces.__file__).parent / "data" / "sample.jsonl"


class Seen(traces.Progress):
    """A Progress that notes (stage label, total) at every advance."""

    def __init__(self) -> None:
        super().__init__("build", mode="none")
        self.seen: list[tuple[str, int | None]] = []

    def advance(self, n: int = 1) -> None:
        super().advance(n)
        self.seen.append((self.label, self.total))


def test_a_build_with_a_tokenizer_counts_the_turns_first_so_it_has_a_total(tmp_path: Path) -> None:
    p = Seen()
    with p:
        traces.build_shards(
            [str(SAMPLE)], tmp_path / "s", traces.BuildOptions(repeats=2), counter=WordCounter(), progress=p
        )
    stages = [label for label, _ in p.seen]
    assert stages[0] == "build: counting turns" and stages[-1] == "build"
    building = [total for label, total in p.seen if label == "build"]
    assert building and set(building) == {2 * 17}  # the sample's 17 client turns, twice, known at once
    assert (p.done, p.total) == (34, 34)


def test_a_build_without_a_tokenizer_reads_the_sources_once(tmp_path: Path) -> None:
    p = Seen()
    with p:
        traces.build_shards([str(SAMPLE)], tmp_path / "s", traces.BuildOptions(), progress=p)
    assert {label for label, _ in p.seen} == {"build"} and p.done == 17
