"""No module of the package over 500 lines (issue 42, items 4 and 5): a module that size holds several concerns,
and each concern is easier to read, test and change in a module of its own."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "evals_cli"
MAX_LINES = 500


def test_no_module_is_over_500_lines() -> None:
    sizes = {str(path.relative_to(PACKAGE.parent)): len(path.read_text(encoding="utf-8").splitlines())
             for path in sorted(PACKAGE.rglob("*.py"))}
    assert len(sizes) > 100  # the package was found, not an empty folder
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}
