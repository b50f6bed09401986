"""The suite's gate over a sliding window of graded conversations: those of the last `duration`, at most the last
`last` (and never more than MAX_WINDOW, which the verdict then says), folded by the run's own Accumulator and
decided by the run's own Gate, so the window's verdict is the verdict `evals run` would give those samples.

With it, the exact (Clopper-Pearson) 95% interval of the window's pass rate (stats.clopper_pearson): a verdict on a
few dozen conversations is shown with its doubt, and an interval does not collapse to a point when every
conversation passed or none did (a bootstrap would). Fewer graded conversations than `min_samples`: `pending`,
never a pass or a fail.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from evals_cli.models.results import ErrorInfo, SampleResult
from evals_cli.models.trajectory import Trajectory, Usage
from evals_cli.output.exit_codes import exit_code_for
from evals_cli.output.summary import Accumulator
from evals_cli.stats import clopper_pearson
from evals_cli.watch.spec import GateWindow
from evals_cli.watch.verdict import MAX_WINDOW, State, WindowVerdict

_GATE_READS = ("turns_passed", "turns_total", "unreliable", "panel_units", "judge", "not_graded")  # what the fold reads
_NO_USAGE, _NO_TRAJECTORY = Usage(), Trajectory()  # shared by every rebuilt result: the fold only reads them


@dataclass(frozen=True, slots=True)
class Kept:
    """What the gate's fold reads of one result, in a few hundred bytes (a SampleResult with its grades takes
    kilobytes even without its trajectory: 10,000 of them took 80 MB)."""

    at: float
    sample_id: str
    passed: bool | None
    score: float | None
    score_note: str | None
    error: tuple[str, str] | None  # (category, message), cut short
    latency_s: float
    cost: float | None
    grades: tuple[tuple[str, float | None, bool, str | None, dict[str, Any] | None], ...]

    @classmethod
    def of(cls, result: SampleResult, at: float) -> Kept:
        grades = tuple((name, g.score, g.applicable, g.error and g.error[:80],
                        {k: v for k, v in g.metadata.items() if k in _GATE_READS} or None)
                       for name, g in result.grades.items())
        error = (result.error.category, result.error.message[:120]) if result.error is not None else None
        return cls(at, result.sample_id, result.passed, result.score, result.score_note, error, result.latency_s,
                   result.cost, grades)

    def result(self) -> SampleResult:
        """What the fold reads, as the attributes of a SampleResult (`_Folded`): built in microseconds, where a
        SampleResult takes a quarter of a millisecond even unvalidated, and a window is decided every few seconds."""
        grades = {name: _FoldedGrade(score, applicable, error, metadata or {})
                  for name, score, applicable, error, metadata in self.grades}
        error = ErrorInfo.model_construct(category=self.error[0], message=self.error[1]) if self.error else None  # type: ignore[arg-type]
        return cast(SampleResult, _Folded(self.sample_id, self.passed, self.score, self.score_note, error,
                                          self.latency_s, self.cost, grades))


class _FoldedGrade:
    """The attributes of a Grade that Accumulator.add reads."""

    __slots__ = ("score", "applicable", "error", "metadata")

    def __init__(self, score: float | None, applicable: bool, error: str | None, metadata: dict[str, Any]) -> None:
        self.score, self.applicable, self.error, self.metadata = score, applicable, error, metadata


class _Folded:
    """The attributes of a SampleResult that Accumulator.add reads (tests/test_watch_parts.py folds both and
    compares)."""

    __slots__ = ("sample_id", "passed", "score", "score_note", "error", "latency_s", "cost", "grades")
    repeat = 0
    failed_by: tuple[()] = ()
    roles: dict[str, Any] = {}
    tags: tuple[()] = ()
    trajectory = _NO_TRAJECTORY
    usage = judge_usage = user_usage = _NO_USAGE

    def __init__(self, sample_id: str, passed: bool | None, score: float | None, score_note: str | None,
                 error: ErrorInfo | None, latency_s: float, cost: float | None, grades: dict[str, Any]) -> None:
        self.sample_id, self.passed, self.score, self.score_note = sample_id, passed, score, score_note
        self.error, self.latency_s, self.cost, self.grades = error, latency_s, cost, grades


class RollingGate:
    def __init__(self, window: GateWindow, accumulator: Callable[[], Accumulator], max_error_rate: float = 0.2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`max_error_rate`: past this share of errored conversations (a judge down) the window has no verdict."""
        self.window, self.accumulator, self.clock = window, accumulator, clock
        self.max_error_rate = max_error_rate
        bound = min(window.last or MAX_WINDOW, MAX_WINDOW)
        self._items: deque[Kept] = deque(maxlen=bound)
        self._dropped = False

    def add(self, result: SampleResult) -> None:
        """Keep what the gate reads of a result (its grades and verdict, not its trajectory)."""
        if len(self._items) == self._items.maxlen and self._items.maxlen == MAX_WINDOW:
            self._dropped = True
        self._items.append(Kept.of(result, self.clock()))

    def _current(self) -> list[SampleResult]:
        if self.window.duration is not None:
            now = self.clock()
            while self._items and now - self._items[0].at > self.window.duration:
                self._items.popleft()
        return [kept.result() for kept in self._items]

    def decide(self) -> WindowVerdict:
        results = self._current()
        acc = self.accumulator()
        for result in results:
            acc.add(result)
        summary = acc.summary()
        graded = summary.passed + summary.failed
        scores = [r.score for r in results if r.error is None and r.score is not None]
        interval = clopper_pearson(summary.passed, graded) if graded else None
        mean = sum(scores) / len(scores) if scores else None
        failing = [r.sample_id for r in reversed(results) if r.passed is False][:50]
        capped = self._dropped and len(results) == MAX_WINDOW
        state: State
        if graded < self.window.min_samples:
            state = "pending"
        elif exit_code_for(summary, self.max_error_rate) == 3 or summary.gate is None or summary.gate.passed is None:
            state = "no_verdict"
        else:
            state = "passed" if summary.gate.passed else "failed"
        return WindowVerdict(state, len(results), graded, summary, interval, mean, failing, capped)
