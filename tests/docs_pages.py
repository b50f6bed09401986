"""The documentation as the tests read it: the README and every page of docs/ (issue 29 item 7 moved most of the
README there). Tests that check an example "as written" look in all of them, so an example keeps its test
whichever page it lives on."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT

DOCS = ROOT / "docs"


def doc_files() -> list[Path]:
    """The README first, then the pages in name order: stable labels (`docs/judge.md:12`) for failures."""
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def label(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def page(name: str) -> str:
    """One page of docs/, e.g. `page("judge.md")`."""
    return (DOCS / name).read_text(encoding="utf-8")


def all_docs() -> str:
    """Every file's text, joined: for tests that look for one example or table wherever it is."""
    return "\n\n".join(path.read_text(encoding="utf-8") for path in doc_files())
