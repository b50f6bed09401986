"""Argument matchers of `tool_args`: merging a tool's defaults with a call's own matchers, comparing values.

Comparison is JSON-strict (true is not 1) because the mocks compare that way too: an argument that would not
select the mock's case must not pass the grader either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evals_cli import safe_regex
from evals_cli.graders.calls import glob_match, short
from evals_cli.models.grader_specs.fields import ArgMatch, ExpectedCall

_MISSING: Any = object()
_ABSENT = "(absent)"
_COMPARISON_FIELDS = ("exact", "ignore", "regex", "contains", "one_of")


def merge(base: ArgMatch, override: ArgMatch) -> ArgMatch:
    """`override` on top of `base`: a comparison it sets replaces base's; modifiers it sets win one by one."""
    merged = base.model_dump(exclude_unset=True)
    if override.comparison is not None:
        for name in _COMPARISON_FIELDS:
            merged.pop(name, None)
    merged.update(override.model_dump(exclude_unset=True))
    return ArgMatch.model_validate(merged)


def matchers_for(call: ExpectedCall, defaults: dict[str, dict[str, ArgMatch]]) -> dict[str, ArgMatch]:
    """The matcher of every argument the expected call checks: the keys of its `args` and `match`.
    Defaults say how to compare an argument, never whether to: they add no argument to check."""
    result: dict[str, ArgMatch] = {}
    for arg in [*call.args, *(k for k in call.match if k not in call.args)]:
        matcher = ArgMatch()
        for pattern, per_arg in defaults.items():  # YAML order: later, more specific entries win
            if glob_match(call.tool, pattern) and arg in per_arg:
                matcher = merge(matcher, per_arg[arg])
        if arg in call.match:
            matcher = merge(matcher, call.match[arg])
        result[arg] = matcher
    return result


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fold(value: str, case_insensitive: bool) -> str:
    return value.casefold() if case_insensitive else value


def equal(expected: Any, actual: Any, m: ArgMatch, subset: bool = False) -> bool:
    """JSON equality with the matcher's modifiers: numeric tolerance, case folding, and subset containment."""
    if _is_number(expected) and _is_number(actual):
        return abs(expected - actual) <= (m.tolerance or 0)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, str) and isinstance(actual, str):
        return _fold(expected, bool(m.case_insensitive)) == _fold(actual, bool(m.case_insensitive))
    if isinstance(expected, dict) and isinstance(actual, dict):
        if not subset and expected.keys() != actual.keys():
            return False
        return all(k in actual and equal(v, actual[k], m, subset) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        if subset:  # every expected element is somewhere in the actual list
            return all(any(equal(e, a, m, subset) for a in actual) for e in expected)
        return len(expected) == len(actual) and all(equal(e, a, m) for e, a in zip(expected, actual, strict=True))
    return type(expected) is type(actual) and expected == actual


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def describe(m: ArgMatch, expected: Any) -> str:
    """What the matcher wants, in words: 'expected' in a rationale reads this."""
    ci = " (ignoring case)" if m.case_insensitive else ""
    if m.regex is not None:
        return f"to match regex {m.regex!r}{ci}"
    if m.contains is not None:
        return f"to contain {short(m.contains)}{ci}"
    if m.one_of is not None:
        return f"one of {short(m.one_of, 80)}{ci}"
    if expected is _MISSING:
        return "to be present"
    tol = f" ± {m.tolerance:g}" if m.tolerance and _is_number(expected) else ""
    kind = "a superset of " if m.subset else ""
    return f"{kind}{short(expected)}{tol}{ci}"


def check(m: ArgMatch, expected: Any, args: dict[str, Any], name: str) -> bool:
    """Does argument `name` of the actual call satisfy the matcher? (`expected` is _MISSING when not given.)"""
    if m.ignore:
        return True
    if name not in args:
        return False
    value = args[name]
    flags = safe_regex.IGNORECASE if m.case_insensitive else 0
    if m.regex is not None:  # RegexTimeout past the bound: the grader reports an error naming the pattern
        return safe_regex.search(m.regex, _as_text(value), flags) is not None
    if m.contains is not None:
        if isinstance(value, list):
            return any(equal(m.contains, item, m) for item in value)
        return _fold(_as_text(m.contains), bool(m.case_insensitive)) in _fold(_as_text(value), bool(m.case_insensitive))
    if m.one_of is not None:
        return any(equal(option, value, m) for option in m.one_of)
    if expected is _MISSING:
        return True
    return equal(expected, value, m, subset=bool(m.subset))


@dataclass(frozen=True)
class Mismatch:
    """The first argument of an actual call that does not satisfy the expectation."""

    argument: str
    wanted: str
    got: str

    def __str__(self) -> str:
        if self.wanted == _ABSENT:
            return f"unexpected argument {self.argument!r} = {self.got}"
        if self.got == _ABSENT:
            return f"argument {self.argument!r} expected {self.wanted}, but it is missing"
        return f"argument {self.argument!r} expected {self.wanted}, got {self.got}"


def compare(call: ExpectedCall, matchers: dict[str, ArgMatch], args: dict[str, Any],
            allow_extra: bool) -> list[Mismatch]:
    """Every argument problem of one actual call against one expected call, in the expectation's order."""
    problems = []
    for name, m in matchers.items():
        expected = m.exact if "exact" in m.model_fields_set else call.args.get(name, _MISSING)
        if not check(m, expected, args, name):
            got = short(args[name]) if name in args else _ABSENT
            problems.append(Mismatch(name, describe(m, expected), got))
    if not allow_extra:
        problems += [Mismatch(k, _ABSENT, short(v)) for k, v in args.items() if k not in matchers]
    return problems
