"""A Rich console that prints plain text when stdout is not a terminal or NO_COLOR is set."""

from __future__ import annotations

import os
import sys

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    plain = not stream.isatty() or bool(os.environ.get("NO_COLOR"))
    if plain:
        return Console(file=stream, no_color=True, color_system=None, highlight=False, emoji=False,
                       width=int(os.environ.get("COLUMNS", "160")), soft_wrap=False)
    return Console(file=stream, highlight=False)
