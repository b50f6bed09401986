"""A Rich console that prints plain text when stdout is not a terminal or NO_COLOR is set.

Plain output is for logs and pipes: no ANSI codes, and no trailing spaces (Rich pads every line of a table to
the table's width; a CI log shows that padding as noise, and diffs of two logs trip on it)."""

from __future__ import annotations

import sys
from typing import IO, Any

from rich.console import Console

from evals_cli.display.terminal import plain, plain_width


class _StripTrailing:
    """A text stream that writes each complete line without its trailing spaces; a partial line waits for its end
    (or a flush)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        data = self._pending + text
        head, sep, self._pending = data.rpartition("\n")
        if sep:
            self._stream.write("\n".join(line.rstrip(" ") for line in head.split("\n")) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ...: the wrapped stream's
        return getattr(self._stream, name)


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if plain(stream):
        return Console(file=_StripTrailing(stream), no_color=True, color_system=None, highlight=False,  # type: ignore[arg-type]
                       emoji=False, width=plain_width(), soft_wrap=False)
    return Console(file=stream, highlight=False)
