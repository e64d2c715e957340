"""The README.md files of a tree: each scenario's (the checker requires one) and the submitter's
`src/` folder's (the checker requires the folder). Made from the point's own numbers, so the
same submission gives the same bytes."""

from __future__ import annotations

import traces

from .layout import OWN_DIR
from .manifest import Headline


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "n/a" if v is None else format(v, fmt)


def scenario_readme(*, system: str, benchmark: str, profile: str, source: str, started_at: str, h: Headline) -> str:
    return "\n".join(
        [
            f"# {system}: {benchmark}, concurrency {h.concurrency}",
            "",
            "One Pareto point of a trajbench submission of the Agentic Inference benchmark (MLPerf Endpoints):",
            f"profile {profile}, {h.concurrency} simulated users, run {source} started {started_at}.",
            "",
            f"- system throughput: {_num(h.output_tokens_per_s)} output tokens/s",
            f"- per-user speed: {_num(h.per_user_tokens_per_s)} tokens/s (pooled over the window turns)",
            f"- TTFT p50 / p90 / p99: {_num(h.ttft_p50_ms)} / {_num(h.ttft_p90_ms)} / {_num(h.ttft_p99_ms)} ms",
            f"- inline accuracy: {_num(h.inline_score, '.4f')}; mean output tokens per turn: {_num(h.osl_mean)}",
            f"- window turns: {h.window_turns}, of which not answered: {h.window_not_ok}",
            "",
            "Files: `performance/result_summary.json`, `config.yaml` and `accuracy/accuracy_results.json` where the",
            "MLPerf submission checker reads them; `performance/run_1/` and `accuracy/config.yaml` as the reference's",
            f"publish_submission.py lays them out; `{OWN_DIR}/` is the run folder as measured (records, run.json,",
            f"scores, OSL). Replay the point with `trajbench replay run --config {OWN_DIR}/run.json`; verify the",
            "submission with `trajbench review` (docs/submission.md).",
            "",
        ]
    )


def src_readme() -> str:
    return "\n".join(
        [
            "# Harness",
            "",
            f"Every point of this submission was measured by trajbench {traces.__version__} (the `trajbench`",
            "distribution), the closed-loop client of the Agentic Inference benchmark. Each scenario's",
            f"`{OWN_DIR}/run.json` holds the point's whole configuration.",
            "",
        ]
    )
