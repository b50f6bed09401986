"""The span query of the `spans` grader: which spans of the episode an assertion is about, and what must hold of
them, in YAML rather than code (promptfoo's trace-span-count / trace-span-duration / trace-error-spans,
pydantic-evals' SpanQuery, in one small form).

Every outcome is three-valued. The spans kept are bounded (models/trajectory.py): when spans or attributes were left
out, or an attribute value was cut, a query whose answer could change with what was not kept is unknown (None),
never a pass or a fail guessed from part of the episode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from evals_cli import regex_patterns, safe_regex
from evals_cli.models.base import StrictModel
from evals_cli.models.trajectory import SpanRecord, SpanTree
from evals_cli.text_caps import is_capped

Known = bool | None  # None: the spans kept cannot say


class CountBounds(StrictModel):
    """How many spans must match: at least `min`, at most `max` (either or both)."""

    min: int | None = Field(default=None, ge=0, description="At least this many.")
    max: int | None = Field(default=None, ge=0, description="At most this many.")

    @model_validator(mode="after")
    def _bounds(self) -> CountBounds:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both, e.g. count: {min: 1}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is over max ({self.max})")
        return self


class SpanAssertion(StrictModel):
    """One assertion: the spans it is about (every match key given must hold of a span; none: every span) and
    what must hold of them (`count`, `absent`, a duration bound; none of these: at least one span matches)."""

    name: str | None = Field(default=None, description="The span's name is exactly this.")
    name_contains: str | None = Field(default=None, description="The span's name contains this text.")
    name_matches: str | None = Field(default=None, description="A regular expression searched in the span's name "
                                     "(anchor with ^ and $).")
    attributes: dict[str, Any] | None = Field(default=None, description="Attributes the span has with these values "
                                              "(JSON equality: 3 is not \"3\", true is not 1).")
    has_attributes: list[str] | None = Field(default=None, description="Attribute keys the span has, any value.")
    error: bool | None = Field(default=None, description="true: the span's status is ERROR; false: it is not.")
    under: str | None = Field(default=None, description="The span has an ancestor (parent, its parent, ...) named "
                              "exactly this.")
    count: int | CountBounds | None = Field(default=None, description="How many spans match: a number (exactly), "
                                            "or {min, max}.")
    absent: bool | None = Field(default=None, description="true: no span matches.")
    min_duration_s: float | None = Field(default=None, ge=0, description="Every matching span took at least this "
                                         "many seconds (and one matches).")
    max_duration_s: float | None = Field(default=None, gt=0, description="Every matching span took at most this "
                                         "many seconds (and one matches); a span that never ended fails it.")

    @model_validator(mode="after")
    def _one_meaning(self) -> SpanAssertion:
        if self.name_matches is not None:
            try:  # the engine and the size check matching runs with, so validate agrees with run
                regex_patterns.compile(self.name_matches)
            except regex_patterns.RegexError as exc:
                raise ValueError(f"name_matches {self.name_matches!r} is not a valid regular expression: {exc}") from None
        if self.absent is False:
            raise ValueError("absent: false says nothing; leave it out (the default asserts that a span matches)")
        durations = self.min_duration_s is not None or self.max_duration_s is not None
        if self.absent and (self.count is not None or durations):
            raise ValueError("absent: true asserts that no span matches; it takes no count or duration bound")
        if not self.selectors() and not self.checks():
            raise ValueError("an empty assertion; say which spans (name, name_contains, name_matches, attributes, "
                             "has_attributes, error, under) or what must hold (count, absent, max_duration_s)")
        if self.selectors() == ["error"] and self.error is False and not self.checks():
            raise ValueError("{error: false} alone holds when any span did not fail; to assert that no span "
                             "failed write {error: true, absent: true}")
        if isinstance(self.count, int) and self.count < 0:
            raise ValueError("count is a number of spans: 0 or more")
        return self

    def selectors(self) -> list[str]:
        keys = ("name", "name_contains", "name_matches", "attributes", "has_attributes", "error", "under")
        return [key for key in keys if getattr(self, key) is not None]

    def checks(self) -> list[str]:
        keys = ("count", "absent", "min_duration_s", "max_duration_s")
        return [key for key in keys if getattr(self, key) is not None]

    def bounds(self) -> tuple[int | None, int | None]:
        """(min, max) matching spans: `absent` is at most 0; no count at least 1."""
        if self.absent:
            return None, 0
        if isinstance(self.count, int):
            return self.count, self.count
        if isinstance(self.count, CountBounds):
            return self.count.min, self.count.max
        return 1, None

    def describe(self) -> str:
        """The spans it is about, as the rationale names them."""
        parts = [f"{key} {json.dumps(getattr(self, key), ensure_ascii=False)}" for key in self.selectors()]
        return "spans with " + ", ".join(parts) if parts else "all spans"


@dataclass(frozen=True)
class Outcome:
    """One assertion's result: holds (True, False, or None: unknown) and what was found."""

    assertion: str
    holds: Known
    said: str


def _all(values: list[Known]) -> Known:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _text_test(stored: str, found: bool) -> Known:
    """A test on a name that held, or failed on a name kept whole; a cut name that failed cannot say."""
    if found:
        return True
    return None if is_capped(stored) else False


def _has_capped(value: Any) -> bool:
    if isinstance(value, str):
        return is_capped(value)
    if isinstance(value, list):
        return any(_has_capped(v) for v in value)
    if isinstance(value, dict):
        return any(_has_capped(v) for v in value.values())
    return False


def _same(a: Any, b: Any) -> bool:
    """JSON equality, where true is not 1 and 1 is 1.0."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or (
        type(a) in (int, float) and type(b) in (int, float) and a == b)


def _attribute(span: SpanRecord, key: str, want: Any, presence: bool) -> Known:
    if key not in span.attributes:
        return None if span.attributes_left_out else False
    if presence:
        return True
    value = span.attributes[key]
    if _same(value, want):
        return True
    return None if _has_capped(value) else False


def _under_all(tree: SpanTree, name: str) -> dict[tuple[str, str], Known]:
    """For every span, whether an ancestor is named `name`: each chain walked once (memoised), so a deep tree
    costs its size, not its size squared; a cycle in a hostile file ends the walk."""
    by_key = {(s.trace_id, s.span_id): s for s in tree.spans}
    known: dict[tuple[str, str], Known] = {}
    for span in tree.spans:
        path: list[tuple[str, str]] = []
        current: SpanRecord | None = span
        answer: Known = False
        while current is not None:
            key = (current.trace_id, current.span_id)
            if key in known:
                answer = known[key]
                break
            if key in path:  # a cycle: no ancestor found on it
                break
            path.append(key)
            parent = by_key.get((current.trace_id, current.parent_id or "")) if current.parent_id else None
            if parent is not None and parent.name == name:
                answer = True
                break
            if parent is None and current.parent_id is not None and tree.left_out:
                answer = None  # the chain goes on among the spans not kept
            current = parent
        for key in path:
            known[key] = answer
    return known


def matches(query: SpanAssertion, tree: SpanTree, span: SpanRecord,
            under: dict[tuple[str, str], Known] | None = None) -> Known:
    """Whether one span is among the spans the assertion is about (`under`: `_under_all` of the query's name)."""
    tests: list[Known] = []
    if query.name is not None:
        tests.append(_text_test(span.name, span.name == query.name))
    if query.name_contains is not None:
        tests.append(_text_test(span.name, query.name_contains in span.name))
    if query.name_matches is not None:
        tests.append(_text_test(span.name, safe_regex.search(query.name_matches, span.name) is not None))
    for key, want in (query.attributes or {}).items():
        tests.append(_attribute(span, key, want, presence=False))
    for key in query.has_attributes or []:
        tests.append(_attribute(span, key, None, presence=True))
    if query.error is not None:
        tests.append((span.error is not None) == query.error)
    if query.under is not None:
        under = under if under is not None else _under_all(tree, query.under)
        tests.append(under.get((span.trace_id, span.span_id), False))
    return _all(tests)


def _names(spans: list[SpanRecord], limit: int = 5) -> str:
    shown = ", ".join(json.dumps(s.name, ensure_ascii=False) for s in spans[:limit])
    return shown + (f" and {len(spans) - limit} more" if len(spans) > limit else "")


def _count(query: SpanAssertion, found: list[SpanRecord], unknown: int) -> tuple[Known, str]:
    low, high = query.bounds()
    n, most = len(found), len(found) + unknown
    what = f"{n} span(s)" + (f" ({_names(found)})" if found else "") + (
        f", and {unknown} not kept or not fully kept that may match" if unknown else "")
    tests: list[Known] = []
    if low is not None:  # met among the spans kept, or out of reach even if every unknown span matched
        tests.append(True if n >= low else (False if most < low else None))
    if high is not None:
        tests.append(True if most <= high else (False if n > high else None))
    holds = _all(tests)
    if query.absent:
        want = "none"
    elif low == high:
        want = f"exactly {low}"
    else:
        want = " and ".join(w for w in (f"at least {low}" if low is not None else "",
                                        f"at most {high}" if high is not None else "") if w)
    return holds, f"{what}, expected {want}"


def _durations(query: SpanAssertion, found: list[SpanRecord], unknown: int) -> tuple[Known, str]:
    low, high = query.min_duration_s, query.max_duration_s
    bad: list[str] = []
    for span in found:
        if span.duration_s is None:
            bad.append(f"{json.dumps(span.name, ensure_ascii=False)} never ended")
        elif high is not None and span.duration_s > high:
            bad.append(f"{json.dumps(span.name, ensure_ascii=False)} took {span.duration_s:.3f}s, over "
                       f"max_duration_s {high:g}")
        elif low is not None and span.duration_s < low:
            bad.append(f"{json.dumps(span.name, ensure_ascii=False)} took {span.duration_s:.3f}s, under "
                       f"min_duration_s {low:g}")
    if bad:
        return False, "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
    if unknown:
        return None, f"{len(found)} span(s) within the bound, {unknown} not kept or not fully kept that may match"
    return True, f"{len(found)} span(s) within the bound"


def check(query: SpanAssertion, tree: SpanTree) -> Outcome:
    """The assertion over the episode's spans."""
    under = _under_all(tree, query.under) if query.under is not None else None
    results = [(span, matches(query, tree, span, under)) for span in tree.spans]
    found = [span for span, hit in results if hit is True]
    unknown = sum(hit is None for _, hit in results) + tree.left_out
    holds, said = _count(query, found, unknown)
    if holds is not False and (query.min_duration_s is not None or query.max_duration_s is not None):
        timed, timed_said = _durations(query, found, unknown)
        holds, said = _all([holds, timed]), (timed_said if timed is False else f"{said}; {timed_said}")
    return Outcome(query.describe(), holds, said)
