"""Lines the commands print beside what they render: notes and warnings on stderr as they are (never Rich
markup), and text on stdout for a reader that may stop early (`evals list | head`).

Rich is imported when a line is printed: `evals --version`, and a quiet run, never import it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any


def notes(lines: list[str], prefix: str = "note: ") -> None:
    """Lines for stderr, as they are (not Rich markup): deprecated names a suite or its rows use, never a problem
    (exit 0 stays 0); with `prefix` "", what evals generate says of each row it dropped."""
    if lines:
        from evals_cli.display.console import make_console

        err = make_console(stderr=True)
        for line in lines:
            err.print(f"{prefix}{line}", markup=False, highlight=False, soft_wrap=True)


def warn(warnings: Iterable[str]) -> None:
    """`warning: ...` on stderr, one line each: what a finished run's files told the reader that reads them."""
    notes(list(warnings), prefix="warning: ")


def write_out(text: str) -> None:
    """Text to stdout, a reader that stops early (`evals list | head`) being no error: it has what it wanted."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def conversation_notes(console: Any, state: Any) -> None:
    """Goal completion (turns to success) and --replay-user divergence, under the table (of a run, or a report)."""
    from evals_cli.report import conversation_notes as lines

    for line in lines(state):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
