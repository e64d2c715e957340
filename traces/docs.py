"""The project's documentation pages (docs/*.md), wherever trajbench runs from: `trajbench docs`.

The pages are one set of files: docs/ in the repository, which GitHub shows, and the same files
inside the installed package `trajbench_docs` (pyproject.toml maps docs/ to it), so a user of the
wheel reads the pages that the messages and `--help` cite without a checkout. Run from a
checkout that is not installed, the folder beside the packages is read.
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from .errors import TraceError

#: The installed package the pages ship in (pyproject.toml: package-dir).
DOCS_PACKAGE = "trajbench_docs"


@dataclass(frozen=True)
class Page:
    name: str  # the file's name without .md: `submitting`
    title: str  # its first heading
    file: Traversable


def _folder() -> Traversable:
    spec = importlib.util.find_spec(DOCS_PACKAGE)
    if spec is not None:
        # the package's folders, not `resources.files`: an editable install's namespace path holds
        # a path hook beside the folder, which Python 3.11's resource reader refuses
        for entry in spec.submodule_search_locations or ():
            if (Path(entry) / "README.md").is_file():
                return Path(entry)
        return resources.files(DOCS_PACKAGE)
    checkout = Path(__file__).resolve().parent.parent / "docs"
    if (checkout / "README.md").is_file():
        return checkout
    raise TraceError(
        f"the documentation pages are not installed (no package {DOCS_PACKAGE}) and there is no docs/ folder "
        "beside the code; reinstall trajbench (pip install trajbench) or read docs/ in its repository"
    )


def _title(text: str) -> str:
    return next((line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")), "")


def pages() -> list[Page]:
    """Every page, by name; the index (README) first."""
    found = [
        Page(f.name.removesuffix(".md"), _title(f.read_text("utf-8")), f)
        for f in _folder().iterdir()
        if f.name.endswith(".md")
    ]
    return sorted(found, key=lambda p: (p.name != "README", p.name))


def page(name: str) -> Page:
    """The page `name` (`submitting`, `submitting.md` or `docs/submitting.md`; `index` is the
    README); an unknown name is an error listing the close ones and the command that lists all."""
    wanted = Path(name).name.removesuffix(".md").lower()
    if wanted in ("index", "readme", ""):
        wanted = "README"
    every = pages()
    for p in every:
        if p.name.lower() == wanted.lower():
            return p
    close = difflib.get_close_matches(wanted, [p.name for p in every], n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise TraceError(f"no documentation page {name!r}{hint}; `trajbench docs` lists them")
