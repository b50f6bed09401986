"""Epoch reducers (inspect_ai's `epochs` with a reducer): with `gate.reducer` and repeats > 1, a sample's k repeats
become one sample before the gate, so that the gate's aggregates and `pass_rate` count samples, not runs.

- `mean`, `median`, `mode`, `max`: each grader's scores over the sample's graded repeats are reduced on their own
  (as inspect_ai reduces each scorer's epochs), and the sample is judged once, by the gate's one rule
  (`Gate.judge_sample`), on those reduced grades. A call to a tool never offered is a 1/0 per repeat (1: none),
  reduced the same way, and fails the sample when the reduced value is under 1. `mode` takes the most common
  value; on a tie, the lowest of the tied values (inspect_ai takes the first seen: a tie is no majority, and a
  pass must not depend on which repeat finished first).
- `at_least_N`: the sample passes when at least N of its repeats passed (each repeat's own verdict); each
  grader's reduced score is 1.0 when at least N of its repeat scores reach its pass mark, else 0.0.

An errored repeat is never a zero. mean, median and mode read the graded repeats only (inspect_ai leaves an
unscored epoch out the same way). max and at_least_N only grow with more repeats, so a pass on the graded repeats
stands, but a sample that does not pass on them while a repeat errored has no verdict (it is errored, with that
repeat's category): the errored repeat could have been the one that passed. A sample whose every repeat errored
is errored.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from evals_cli.models.results import ErrorInfo, FailedBy, Grade, ReducedSample, SampleResult
from evals_cli.models.specs import REDUCERS, is_reducer
from evals_cli.thresholds import EPS


class Gate(Protocol):
    """What a reducer reads of the run's gate (gate/gate.py's `Gate`, which holds the reducer: named here by its
    shape, so the two modules do not import each other)."""

    @property
    def na_pass(self) -> bool: ...

    def judge_sample(self, grades: dict[str, Grade]) -> Any: ...

    def grader_passes(self, grader: str, score: float) -> bool: ...

    def threshold(self, grader: str) -> float: ...


@dataclass(frozen=True)
class Reducer:
    """A parsed `gate.reducer`: its name as written, its kind, and N for at_least_N."""

    name: str
    kind: str
    n: int = 0

    @classmethod
    def parse(cls, name: str) -> Reducer:
        if not is_reducer(name):
            raise ValueError(f"unknown reducer '{name}'")
        if name in REDUCERS:
            return cls(name, name)
        return cls(name, "at_least", int(name.removeprefix("at_least_")))

    @property
    def monotone(self) -> bool:
        """More repeats can only raise the result: a failure with a repeat errored is not known."""
        return self.kind in ("max", "at_least")

    def statistic(self, values: list[float]) -> float:
        """mean, median, mode (lowest on a tie) or max of a non-empty list."""
        if self.kind == "mean":
            return sum(values) / len(values)
        if self.kind == "median":
            return float(statistics.median(values))
        if self.kind == "max":
            return max(values)
        counts = Counter(round(v, 9) for v in values)
        top = max(counts.values())
        return min(v for v, c in counts.items() if c == top)

    def describe(self, repeats: int) -> str:
        """How a sample was made of its repeats, for the gate's message and the table."""
        if self.kind == "at_least":
            return f"passed when at least {self.n} of its {repeats} repeats passed ({self.name})"
        return f"the {self.name} of its {repeats} repeats"


@dataclass(frozen=True)
class Repeat:
    """What the reduction keeps of one result: each grade's (score, applicable), the verdict and the error."""

    repeat: int
    grades: dict[str, tuple[float | None, bool]]
    passed: bool | None
    error: ErrorInfo | None
    unknown_tool: bool
    unchecked: bool

    @classmethod
    def of(cls, result: SampleResult) -> Repeat:
        return cls(result.repeat, {n: (g.score, g.applicable) for n, g in result.grades.items()}, result.passed,
                   result.error, any(f.rule == "unknown_tool" for f in result.failed_by),
                   result.error is None and result.passed is None and result.score_note is not None)


@dataclass
class _Sample:
    """One sample's repeats, split by what they give the reduction."""

    sample_id: str
    repeats: list[Repeat]
    graded: list[Repeat] = field(init=False)
    errored: list[Repeat] = field(init=False)

    def __post_init__(self) -> None:
        self.repeats = sorted(self.repeats, key=lambda r: r.repeat)
        self.graded = [r for r in self.repeats if r.error is None]
        self.errored = [r for r in self.repeats if r.error is not None]

    @property
    def passes(self) -> int:
        return sum(1 for r in self.graded if r.passed)

    def record(self, result: SampleResult) -> ReducedSample:
        return ReducedSample(sample_id=self.sample_id, repeats=len(self.repeats), graded=len(self.graded),
                             passes=self.passes, score=result.score, passed=result.passed,
                             grades={n: g.score if g.applicable else None for n, g in result.grades.items()},
                             failed_by=result.failed_by, error=result.error, note=result.score_note)


def reduce_sample(gate: Gate, reducer: Reducer, sample_id: str,
                  repeats: list[Repeat]) -> tuple[ReducedSample, SampleResult]:
    """(what summary.json records for the sample, the one result the gate's aggregates and counts read)."""
    sample = _Sample(sample_id, repeats)
    if not sample.graded:
        first = sample.errored[0].error
        assert first is not None
        result = SampleResult(sample_id=sample_id, error=ErrorInfo(category=first.category, message=(
            f"all {len(sample.errored)} repeats errored; the first: {first.message}")))
    elif reducer.kind == "at_least":
        result = _at_least(gate, reducer, sample)
    else:
        result = _statistic(gate, reducer, sample)
    return sample.record(result), result


def _statistic(gate: Gate, reducer: Reducer, sample: _Sample) -> SampleResult:
    """mean, median, mode, max: each grader reduced, then the gate's one rule on the reduced grades."""
    grades = {name: grade for name in _names(sample) if (grade := _reduce_grader(gate, reducer, sample, name))}
    verdict = gate.judge_sample(grades)
    score, passed, failed_by = verdict.score, verdict.passed, list(verdict.failed_by)
    error, note = verdict.incomplete, verdict.note
    clean = reducer.statistic([0.0 if r.unknown_tool else 1.0 for r in sample.graded])
    if clean < 1 - EPS:
        called = sum(1 for r in sample.graded if r.unknown_tool)
        failed_by.append(FailedBy(rule="unknown_tool", score=clean, threshold=1.0, reason=(
            f"called a tool never offered in {called} of {len(sample.graded)} graded repeats "
            f"({reducer.name} {clean:.2f} < 1)")))
        passed, error = False, None
    if passed is not True and reducer.monotone and sample.errored:
        return _not_known(sample, reducer, grades)
    if error is not None:
        return SampleResult(sample_id=sample.sample_id, grades=grades, error=error)
    return SampleResult(sample_id=sample.sample_id, grades=grades, score=score, passed=passed,
                        failed_by=failed_by if passed is False else [], score_note=note)


def _at_least(gate: Gate, reducer: Reducer, sample: _Sample) -> SampleResult:
    """Passed when at least N repeats passed; failed when N cannot be reached even if every errored repeat had
    passed; else not known."""
    grades = {name: _at_least_grade(gate, reducer, sample, name) for name in _names(sample)}
    passes, n = sample.passes, reducer.n
    if passes >= n:
        return SampleResult(sample_id=sample.sample_id, grades=grades, score=1.0, passed=True)
    if passes + len(sample.errored) >= n:
        return _not_known(sample, reducer, grades)
    if passes == 0 and all(r.unchecked for r in sample.graded) and not sample.errored:
        return SampleResult(sample_id=sample.sample_id, grades=grades, score_note=(
            f"nothing to check in any of its {len(sample.graded)} repeats: no verdict"))
    reason = f"{passes} of {len(sample.repeats)} repeats passed; {reducer.name} needs {n}"
    return SampleResult(sample_id=sample.sample_id, grades=grades, score=0.0, passed=False,
                        failed_by=[FailedBy(rule="at_least", score=float(passes), threshold=float(n), reason=reason)])


def _not_known(sample: _Sample, reducer: Reducer, grades: dict[str, Grade]) -> SampleResult:
    first = sample.errored[0].error
    assert first is not None
    return SampleResult(sample_id=sample.sample_id, grades=grades, error=ErrorInfo(category=first.category, message=(
        f"incomplete: {sample.passes} of {len(sample.repeats)} repeats passed and {len(sample.errored)} errored "
        f"({first.category}): whether the sample passes ({reducer.name}) is not known")))


def _names(sample: _Sample) -> list[str]:
    return list(dict.fromkeys(name for r in sample.graded for name in r.grades))


def _counted(gate: Gate, score: float | None, applicable: bool) -> float | None:
    """What a repeat's grade gives the reduction: as scores.counted (n/a left out unless the gate passes it)."""
    return score if applicable or gate.na_pass else None


def _reduce_grader(gate: Gate, reducer: Reducer, sample: _Sample, name: str) -> Grade | None:
    present = [r.grades[name] for r in sample.graded if name in r.grades]
    values = [v for s, a in present if (v := _counted(gate, s, a)) is not None]
    if values:
        return Grade(score=reducer.statistic(values), rationale=f"{reducer.name} of {len(values)} repeat score(s)")
    if any(s is not None for s, _ in present):
        return Grade.not_applicable(f"nothing to check in any of its {len(present)} graded repeats")
    return Grade.failed(f"no score in any of its {len(present)} graded repeats") if present else None


def _at_least_grade(gate: Gate, reducer: Reducer, sample: _Sample, name: str) -> Grade:
    """1.0 when at least N of the grader's repeat scores reach its pass mark; 0.0 when N cannot be reached even
    if every missing score (an errored repeat, a grade error) had; else no score."""
    present = [r.grades[name] for r in sample.graded if name in r.grades]
    values = [v for s, a in present if (v := _counted(gate, s, a)) is not None]
    reached = sum(1 for v in values if gate.grader_passes(name, v))
    missing = len(sample.errored) + sum(1 for s, _ in present if s is None)
    what = f"{reached} of {len(present)} graded repeats reach {gate.threshold(name):g}"
    if reached >= reducer.n:
        return Grade(score=1.0, rationale=what)
    if not values and not missing:
        return Grade.not_applicable(f"nothing to check in any of its {len(present)} graded repeats")
    if reached + missing < reducer.n:
        return Grade(score=0.0, rationale=f"{what}; {reducer.name} needs {reducer.n}")
    return Grade.failed(f"{what} and {missing} have no score: {reducer.name} is not known")
