"""Headless chromium for tests that must see a page as a person does (a test helper).

`screenshot` saves a PNG of the page under `TRAJBENCH_SCREENSHOTS` when that is set (CI keeps and
lists the folder), else in the test's own tmp folder, and prints where, so the evidence is in the
test output (`pytest -rP`, or `-s`). `dom` returns the page's DOM after its scripts ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCREENSHOTS_ENV = "TRAJBENCH_SCREENSHOTS"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no chromium on this machine (Debian package `chromium`)")


def _flags(tmp_path: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
    ]


def screenshot(page: Path, name: str, tmp_path: Path, *, size: str = "1200,1600") -> tuple[Path, str]:
    """A screenshot of `page` named `name` (.png); returns its path and chromium's log."""
    folder = Path(os.environ[SCREENSHOTS_ENV]) if os.environ.get(SCREENSHOTS_ENV) else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}.png"
    res = subprocess.run(
        [chromium(), *_flags(tmp_path), f"--window-size={size}", f"--screenshot={shot}", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(f"screenshot of {page}: {shot}")
    return shot, res.stderr


def dom(page: Path, tmp_path: Path, *, size: str | None = None) -> tuple[str, str]:
    """The DOM of `page` once its load handlers ran (laid out in a window of `size`, e.g.
    "1280,900", when given), and chromium's log."""
    window = [f"--window-size={size}"] if size else []
    res = subprocess.run(
        [chromium(), *_flags(tmp_path), *window, "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return res.stdout, res.stderr


def console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)]
