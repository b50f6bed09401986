"""A user's regular expression compiled, apart from matching it (safe_regex.py bounds each match in time).

A pattern is compiled where it is read (an ArgMatch regex, a letta-evals extractor, a match grader's ground
truth), so that a bad one is refused at validate with the file and line that wrote it. Compiling needs no time
bound from the run's settings, only a bound on size, so the modules that only compile stand on this module
alone: it imports nothing of evals_cli.

Compiling is bounded by size: `regex` unrolls counted repeats at compile time, so `((((a{100}){100}){100}){100})`
never finishes compiling, and no timeout applies to compiling. A pattern whose repeats multiply out past
MAX_EXPANSION nodes is refused as a RegexError before `regex` sees it.

`regex` itself is imported at the first pattern compiled (about 7 ms of every start otherwise, for the suites
that never use a regex); `RegexError`, `Pattern` and `Match` are its names, read from it when first asked for.
"""

from __future__ import annotations

import importlib
import re as _re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import regex

# the standard parser measures a pattern before `regex` compiles it (private modules: no stubs, hence importlib)
_c: Any = importlib.import_module("re._constants")
_sre_parser: Any = importlib.import_module("re._parser")

_REPEATS = tuple(getattr(_c, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_c, name))

IGNORECASE: int = _re.IGNORECASE  # the same flag bit in `regex`
if TYPE_CHECKING:
    RegexError = regex.error  # a pattern that does not compile
    Pattern = regex.Pattern
    Match = regex.Match


def _regex() -> Any:
    """The `regex` package, imported at the first pattern compiled (see the module docstring)."""
    import regex

    return regex


def __getattr__(name: str) -> Any:
    """`RegexError` (a pattern that does not compile), `Pattern` and `Match`: `regex`'s, imported when first read."""
    if name in ("RegexError", "Pattern", "Match"):
        return getattr(_regex(), {"RegexError": "error"}.get(name, name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def escape(text: str) -> str:
    return _regex().escape(text)


__all__: list[Any] = ["IGNORECASE", "MAX_EXPANSION", "Match", "Pattern", "RegexError", "compile", "escape"]
