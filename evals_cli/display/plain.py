"""What a quiet run (`evals run -q`) prints, without importing Rich when Rich would print the text unchanged.

A quiet run prints one line (the gate's verdict) and, when something went wrong, a few more; importing Rich's
console for them was about 10 ms of a run's start, and the progress view (tables, bars, markup) a few more. To a
pipe or a log (stdout not a terminal, or NO_COLOR set) the console of `display.console.make_console` prints a
line of printable text that fits its width as the line itself, trailing spaces dropped: that case is written here
directly. Anything else (a terminal, markup, a control character, a line that Rich could wrap, text the stream
cannot encode) goes to that same Rich console, built at first need, so the output is Rich's in every case."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING

from evals_cli.display.terminal import plain, plain_width

if TYPE_CHECKING:
    from rich.console import Console

NARROW_BELOW = "\u1100"  # Rich counts every character below the first wide range (Hangul Jamo) at most one cell


def stopping_message(count: int, presses: int = 1) -> str:
    """What Ctrl-C says at once (the first press waits for the samples in flight; the next abandons them)."""
    plural = "sample" if count == 1 else "samples"
    if presses > 1:
        return f"stopping now: abandoning {count} in-flight {plural}"
    if not count:
        return "stopping: no samples in flight"
    return f"stopping: waiting for {count} in-flight {plural} (Ctrl-C again to abandon them)"


class PlainConsole:
    """`make_console(stderr)`'s `print`, for text printed with no markup and no highlighting."""

    def __init__(self, stderr: bool = False) -> None:
        self.stderr = stderr
        self._rich: Console | None = None

    @property
    def file(self) -> IO[str]:
        return sys.stderr if self.stderr else sys.stdout

    def print(self, text: str, *, markup: bool | None = None, highlight: bool | None = None,
              soft_wrap: bool = False) -> None:
        if markup is False and not highlight and self._unchanged(text, soft_wrap):
            self.file.write("".join(line.rstrip(" ") + "\n" for line in text.split("\n")))
            return
        if self._rich is None:
            from evals_cli.display.console import make_console

            self._rich = make_console(stderr=self.stderr)
        self._rich.print(text, markup=markup, highlight=highlight, soft_wrap=soft_wrap)

    def _unchanged(self, text: str, soft_wrap: bool) -> bool:
        """Whether the plain Rich console would print `text` as it is: a pipe or NO_COLOR (no styles, no emoji
        codes), no control character or tab (Rich drops or expands them), and each line within the width unless
        soft-wrapped (no line Rich would wrap or fold)."""
        stream = self.file
        if not plain(stream):
            return False
        try:
            width = plain_width()
            text.encode(getattr(stream, "encoding", None) or "utf-8")
        except (ValueError, LookupError):
            return False
        for line in text.split("\n"):
            if not line.isprintable():
                return False
            if not soft_wrap and len(line) > width // 2 and (len(line) > width or _cells(line) > width):
                return False
        return True


def _cells(line: str) -> int:
    """The line's width in cells as Rich counts it; Rich's own table (rich.cells, a millisecond, not the console)
    only for a line with a character that may be wide."""
    if max(line) < NARROW_BELOW:
        return len(line)
    from rich.cells import cell_len

    return cell_len(line)


class QuietProgress:
    """The progress of a quiet run, as `display.live.LiveProgress(enabled=False)` is: nothing while the run goes,
    and Ctrl-C (or SIGTERM) says at once what happens now, on stderr."""

    def __init__(self, err: PlainConsole) -> None:
        self.err = err
        self.stopping: str | None = None

    def __enter__(self) -> QuietProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self) -> None:
        pass

    def interrupted(self, presses: int, in_flight: int) -> None:
        message = stopping_message(in_flight, presses)
        self.stopping = message
        self.err.print(message, markup=False, highlight=False, soft_wrap=True)
        try:
            self.err.file.flush()
        except (OSError, ValueError):
            pass


def print_errors(err: Console | PlainConsole, messages: list[str]) -> None:
    """The run's messages on stderr, one `error:` line each, whole (a console of either kind)."""
    for message in messages:
        err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
