"""The documentation pages: `trajbench docs` lists and prints every page, from a checkout and
from the installed package (built here as a wheel builds it); every page is in the index, every
link between pages and every page a message or --help cites exists."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import in_process as run

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def test_every_page_is_listed_and_indexed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["docs"], capsys)
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line and not line.startswith("`")}
    assert listed == {p.stem for p in _pages()}
    index = (DOCS / "README.md").read_text()
    assert [p.name for p in _pages() if f"]({p.name})" not in index] == ["README.md"]
    assert "submitting.md" in (ROOT / "README.md").read_text()  # the README links the submitter's page


def test_links_between_pages_resolve() -> None:
    broken = []
    for page in _pages():
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).is_file():
                broken.append(f"{page.name} -> {target}")
    assert broken == []


def test_every_page_the_code_cites_exists() -> None:
    """Messages and --help say `docs/NAME.md`: each is a page a user can open (`trajbench docs`)."""
    cited: dict[str, set[str]] = {}
    for package in ("traces", "replay", "eval"):
        for source in (ROOT / package).rglob("*.py"):
            for name in re.findall(r"docs/([a-z0-9-]+\.md)", source.read_text("utf-8")):
                cited.setdefault(name, set()).add(str(source.relative_to(ROOT)))
    for top in ("cli.py", "jobs.py"):
        for name in re.findall(r"docs/([a-z0-9-]+\.md)", (ROOT / top).read_text("utf-8")):
            cited.setdefault(name, set()).add(top)
    missing = {name: sorted(where) for name, where in cited.items() if not (DOCS / name).is_file()}
    assert missing == {}


def test_a_page_is_printed_and_a_wrong_name_is_told(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["docs", "submitting"], capsys)
    assert code == 0 and out == (DOCS / "submitting.md").read_text()
    code, out, _ = run(["docs", "docs/compliance.md"], capsys)
    assert code == 0 and out.startswith("# What makes a run official")
    code, out, _ = run(["docs", "closed-loop", "--path"], capsys)
    assert code == 0 and Path(out.strip()).resolve() == (DOCS / "closed-loop.md").resolve()
    code, _, err = run(["docs", "submision"], capsys)
    assert code == 1
    assert err.strip() == (
        "Error: no documentation page 'submision' (did you mean submission, submitting?); `trajbench docs` lists them"
    )


@pytest.mark.slow
def test_the_installed_package_carries_the_pages(tmp_path: Path) -> None:
    """Built as a wheel is built (setuptools' build_py from pyproject.toml, on a copy of the
    checkout), the package holds docs/ as `trajbench_docs`, and `trajbench docs` run from it,
    with no checkout in sight, prints the same pages."""
    src = tmp_path / "src"
    shutil.copytree(
        ROOT,
        src,
        # what a checkout holds besides the source: the set-up's venv and demo, CI's screenshots
        ignore=shutil.ignore_patterns(
            ".git", "tests", "*.egg-info", "build", "__pycache__", ".*cache*", ".venv", "demo-out", "ci-screenshots"
        ),
    )
    lib = tmp_path / "lib"
    subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py", "--build-lib", str(lib)],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert sorted(p.name for p in (lib / "trajbench_docs").glob("*.md")) == [p.name for p in _pages()]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, cli; sys.argv[0] = 'trajbench'; cli.main(sys.argv[1:])",
            "docs",
            "submitting",
        ],
        cwd=elsewhere,
        env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (DOCS / "submitting.md").read_text()
    where = subprocess.run(
        [sys.executable, "-c", "import sys, cli; cli.main(sys.argv[1:])", "docs", "terms", "--path"],
        cwd=elsewhere,
        env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert Path(where.stdout.strip()).parent == lib / "trajbench_docs"
