"""Every user-supplied regular expression runs here, with a time bound.

Patterns come from datasets and suites other people wrote, and the text they run on comes from a model: a
pattern such as `^(a+)+$` backtracks for ever on `aaaa...a!`, and the standard `re` engine can neither be
interrupted nor bounded (the run then ignores SIGTERM, since Python signal handlers only run between
bytecodes). The `regex` package runs the same syntax with a `timeout=`: past it the match raises, and we raise
`RegexTimeout` naming the pattern, which graders turn into a grade error (not a zero, not a hang). Compiling,
and the bound on a pattern's size that keeps compiling itself finite, is regex_patterns.py's: the modules that
only compile a pattern to check it need neither the time bound nor the settings it is read from.

The bound is one second per match unless the environment variable `EVALS_REGEX_TIMEOUT` (seconds, > 0; see
evals_cli/settings.py) says otherwise. One second is far more than any sane pattern needs on a capped text
(see the stored-text cap) and short enough that a hostile dataset costs a second per pattern, and that the
event loop, which a match blocks, answers signals within about that long.

Signals: asyncio's handlers only run once the event loop gets control back, and a match on the loop's thread
holds it. So while a match runs on the main thread, SIGINT and SIGTERM get a handler of ours that aborts the
match (`regex` checks for signals while matching) with `RegexInterrupted`; the signal has still reached the
loop's wakeup pipe, so the run's own handler (stop, grace, summary) runs as soon as the grade gives way.
`RegexInterrupted` is a BaseException so that no grader records it as a grade: the sample is left unfinished
(and `--resume` runs it again), as any sample cut off by an interruption is.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from evals_cli import regex_patterns
from evals_cli.regex_patterns import IGNORECASE, compile, escape

if TYPE_CHECKING:
    from evals_cli.regex_patterns import Match, Pattern, RegexError

TIMEOUT_ENV = "EVALS_REGEX_TIMEOUT"


def __getattr__(name: str) -> Any:
    """`RegexError`, `Pattern` and `Match`, as regex_patterns reads them (imported when first asked for)."""
    if name in ("RegexError", "Pattern", "Match"):
        return getattr(regex_patterns, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RegexTimeout(Exception):
    """A match ran past the bound: the message names the pattern, the text length and how to change it."""

    def __init__(self, pattern: str, text_length: int, seconds: float) -> None:
        shown = pattern if len(pattern) <= 120 else pattern[:117] + "..."
        super().__init__(f"regex /{shown}/ took longer than {seconds:g}s on a {text_length}-character text "
                         f"(catastrophic backtracking?); simplify the pattern or raise {TIMEOUT_ENV}")
        self.pattern = pattern


class RegexInterrupted(BaseException):
    """SIGINT or SIGTERM arrived during a match: the match was abandoned so that the run can stop."""


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")


@contextmanager
def _interruptible() -> Iterator[None]:
    """On the main thread, let SIGINT/SIGTERM abort the match in progress (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are delivered to the main thread only: nothing here can hold them up
        return
    previous: dict[int, Any] = {}

    def abort(signum: int, frame: Any) -> None:
        raise RegexInterrupted(signum)

    try:
        for sig in _STOP_SIGNALS:
            previous[sig] = signal.signal(sig, abort)
    except (ValueError, OSError):  # no signals here (an embedded interpreter): match without the hook
        pass
    try:
        yield
    except RegexInterrupted as stop:
        _restore(previous)
        signum = int(stop.args[0]) if stop.args else signal.SIGINT
        handler = previous.get(signum)
        if getattr(handler, "__name__", "") != "_sighandler_noop":  # no asyncio loop watching: act as it would
            signal.raise_signal(signum)
        raise
    finally:
        _restore(previous)


def _restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        try:
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        except (ValueError, OSError):
            pass
    previous.clear()


def _bounded(compiled: Pattern, text: str, run: Callable[[float], T]) -> T:
    seconds = timeout_s()
    with _interruptible():
        try:
            return run(seconds)
        except TimeoutError:
            raise RegexTimeout(compiled.pattern, len(text), seconds) from None


def timeout_s() -> float:
    """The bound in force: EVALS_REGEX_TIMEOUT (see evals_cli/settings.py; a bad value is a ConfigError)."""
    from evals_cli.settings import knob

    value: float = knob("regex_timeout")
    return value


def search(pattern: str | Pattern, text: str, flags: int = 0) -> Match | None:
    """`re.search` with the time bound; RegexTimeout past it."""
    compiled = compile(pattern, flags)
    return _bounded(compiled, text, lambda seconds: compiled.search(text, timeout=seconds, concurrent=True))


def fullmatch(pattern: str | Pattern, text: str, flags: int = 0) -> Match | None:
    """`re.fullmatch` with the time bound; RegexTimeout past it."""
    compiled = compile(pattern, flags)
    return _bounded(compiled, text, lambda seconds: compiled.fullmatch(text, timeout=seconds, concurrent=True))


__all__: list[Any] = ["IGNORECASE", "Match", "Pattern", "RegexError", "RegexInterrupted",
                      "RegexTimeout",
                      "TIMEOUT_ENV", "compile", "escape", "fullmatch", "search", "timeout_s"]
