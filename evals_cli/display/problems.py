"""How every command reports problems on stderr: one line for one problem, a heading and a list for several.

One renderer for `evals run`, `evals validate`, `evals analyze` and the sessions pipeline, so an error looks
the same whichever command found it.
"""

from __future__ import annotations

from evals_cli.errors import EXIT_INVALID


def print_problems(problems: list[str], code: int = EXIT_INVALID) -> None:
    """Print `problems` to stderr; the heading says whether the input was wrong (exit 2) or the run failed."""
    from rich.markup import escape

    from evals_cli.display.console import make_console

    err = make_console(stderr=True)
    heading = "invalid input" if code == EXIT_INVALID else "run could not complete"
    first = f"{heading} ({len(problems)} problems)" if len(problems) > 1 else escape(problems[0])
    err.print(f"[bold red]error[/]: {first}", markup=True, highlight=False, soft_wrap=True)
    if len(problems) > 1:
        for problem in problems:
            err.print(f"  - {problem}", markup=False, highlight=False, soft_wrap=True)
