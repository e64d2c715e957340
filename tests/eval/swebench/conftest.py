"""The SWE-bench extra, for the tests that run it: each of them skips, saying why, where the extra
is not installed (a fresh clone's `pip install -e '.[test]'`)."""

from __future__ import annotations

import pytest

WHY = "the SWE-bench extra is not installed: pip install 'trajbench[swebench]'"


@pytest.fixture(scope="session")
def swebench_extra() -> None:
    """mini-swe-agent and the swebench harness (`swebench.harness`: a bare `swebench` would find
    this test folder, which is on sys.path under that name)."""
    pytest.importorskip("minisweagent", reason=WHY)
    pytest.importorskip("swebench.harness", reason=WHY)
