"""No module of the package over 500 lines outside the command line and the runner (issue 42, item 4): a module
that size holds several concerns, and each concern is easier to read, test and change in a module of its own.
The command line (cli*.py) and the runner (runner/) are left out: their own restructuring brings them under."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "evals_cli"
MAX_LINES = 500


def _outside_cli_and_runner(path: Path) -> bool:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] != "runner" and not (len(relative.parts) == 1 and relative.name.startswith("cli"))


def test_no_module_outside_the_cli_and_the_runner_is_over_500_lines() -> None:
    sizes = {str(path.relative_to(PACKAGE.parent)): len(path.read_text(encoding="utf-8").splitlines())
             for path in sorted(PACKAGE.rglob("*.py")) if _outside_cli_and_runner(path)}
    assert len(sizes) > 100  # the package was found, not an empty folder
    assert {name: lines for name, lines in sizes.items() if lines > MAX_LINES} == {}
