"""Every user-supplied regular expression runs here, with a time bound.

Patterns come from datasets and suites other people wrote, and the text they run on comes from a model: a
pattern such as `^(a+)+$` backtracks for ever on `aaaa...a!`, and the standard `re` engine can neither be
interrupted nor bounded (the run then ignores SIGTERM, since Python signal handlers only run between
bytecodes). The `regex` package runs the same syntax with a `timeout=`: past it the match raises, and we raise
`RegexTimeout` naming the pattern, which graders turn into a grade error (not a zero, not a hang).

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

import importlib
import re as _re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    import regex

# the standard parser measures a pattern before `regex` compiles it (private modules: no stubs, hence importlib)
_c: Any = importlib.import_module("re._constants")
_sre_parser: Any = importlib.import_module("re._parser")

_REPEATS = tuple(getattr(_c, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, name))

TIMEOUT_ENV = "EVALS_REGEX_TIMEOUT"

IGNORECASE: int = _re.IGNORECASE  # the same flag bit in `regex`
if TYPE_CHECKING:
    RegexError = regex.error  # a pattern that does not compile
    Pattern = regex.Pattern
    Match = regex.Match


def _regex() -> Any:
    """The `regex` package, imported at the first pattern compiled (about 7 ms of every start otherwise, for the
    suites that never match a regex)."""
    import regex

    return regex


def __getattr__(name: str) -> Any:
    """`RegexError` (a pattern that does not compile), `Pattern` and `Match`: `regex`'s, imported when first read."""
    if name in ("RegexError", "Pattern", "Match"):
        return getattr(_regex(), {"RegexError": "error"}.get(name, name))
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


_COUNTS = _re.compile(r"\{(\d*),?(\d*)\}")  # {n}, {n,}, {,m}, {n,m}: a fixed, linear pattern
MAX_EXPANSION = 200_000  # nodes a pattern's counted repeats multiply out to: regex compiles 1,000,000 in 0.5 s


def _expansion(items: Any) -> int:
    """How many nodes `regex` builds for a parsed pattern: counted repeats are unrolled at compile time, so
    `((((a{100}){100}){100}){100})` never finishes compiling and `a{4294967294}` neither. Read from the
    standard parser's tree (linear in the pattern); products are capped so that the count stays small."""
    total = 0
    for op, av in items:
        if op in _REPEATS:
            low, high, sub = av
            count = low if high == _sre_parser.MAXREPEAT else high
            total += max(count, 1) * _expansion(sub)
        elif op is _c.SUBPATTERN:
            total += _expansion(av[3])
        elif op is _c.BRANCH:
            total += sum(_expansion(branch) for branch in av[1])
        elif op is _c.ATOMIC_GROUP:
            total += _expansion(av)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            total += _expansion(av[1])
        elif op is _c.GROUPREF_EXISTS:
            total += _expansion(av[1]) + (_expansion(av[2]) if av[2] else 0)
        else:
            total += 1
        if total > MAX_EXPANSION:
            return total
    return total


def _check_size(pattern: str, flags: int) -> None:
    try:
        size = _expansion(_sre_parser.parse(pattern, flags & ~_regex().VERSION1))
    except (_re.error, OverflowError, RecursionError, TypeError, ValueError):
        # `regex` syntax the standard parser does not know (\p{L}, ...): bounded by the product of all its
        # repeat counts, nested or not (an over-estimate, for such patterns only)
        size = 1
        for low, high in _COUNTS.findall(pattern):
            digits = high or low
            size *= MAX_EXPANSION + 1 if len(digits) > 9 else max(int(digits or 1), 1)
            if size > MAX_EXPANSION:
                break
    if size > MAX_EXPANSION:
        shown = pattern if len(pattern) <= 120 else pattern[:117] + "..."
        raise _regex().error(f"/{shown}/ repeats expand past {MAX_EXPANSION:,} steps (nested counted repeats "
                         "such as (a{100}){100}); write a simpler pattern")


def compile(pattern: str | Pattern, flags: int = 0) -> Pattern:  # noqa: A001  (mirrors re.compile)
    """The compiled pattern (cached by `regex`); raises RegexError when it is not a valid regex, or when its
    counted repeats would make compiling itself unbounded (see `_expansion`)."""
    engine = _regex()
    if isinstance(pattern, engine.Pattern):
        return cast("Pattern", pattern)
    _check_size(cast(str, pattern), flags)
    return engine.compile(pattern, flags)


def search(pattern: str | Pattern, text: str, flags: int = 0) -> Match | None:
    """`re.search` with the time bound; RegexTimeout past it."""
    compiled = compile(pattern, flags)
    return _bounded(compiled, text, lambda seconds: compiled.search(text, timeout=seconds, concurrent=True))


def fullmatch(pattern: str | Pattern, text: str, flags: int = 0) -> Match | None:
    """`re.fullmatch` with the time bound; RegexTimeout past it."""
    compiled = compile(pattern, flags)
    return _bounded(compiled, text, lambda seconds: compiled.fullmatch(text, timeout=seconds, concurrent=True))


def escape(text: str) -> str:
    return _regex().escape(text)


__all__: list[Any] = ["IGNORECASE", "Match", "Pattern", "RegexError", "RegexInterrupted",
                      "RegexTimeout",
                      "TIMEOUT_ENV", "compile", "escape", "fullmatch", "search", "timeout_s"]
