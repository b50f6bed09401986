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

from evals_cli.models.results import Grade, SampleResult
from evals_cli.models.trajectory import Trajectory
from evals_cli.output.exit_codes import exit_code_for
from evals_cli.output.summary import Accumulator
from evals_cli.stats import clopper_pearson
from evals_cli.watch.spec import GateWindow
from evals_cli.watch.verdict import MAX_WINDOW, State, WindowVerdict

_GATE_READS = ("turns_passed", "turns_total", "unreliable", "panel_units", "judge", "not_graded")  # what the fold reads


class RollingGate:
    def __init__(self, window: GateWindow, accumulator: Callable[[], Accumulator], max_error_rate: float = 0.2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`max_error_rate`: past this share of errored conversations (a judge down) the window has no verdict."""
        self.window, self.accumulator, self.clock = window, accumulator, clock
        self.max_error_rate = max_error_rate
        bound = min(window.last or MAX_WINDOW, MAX_WINDOW)
        self._items: deque[tuple[float, SampleResult]] = deque(maxlen=bound)
        self._dropped = False

    def add(self, result: SampleResult) -> None:
        """Keep what the gate reads of a result (its grades and verdict, not its trajectory)."""
        if len(self._items) == self._items.maxlen and self._items.maxlen == MAX_WINDOW:
            self._dropped = True
        grades = {name: Grade(score=g.score, applicable=g.applicable, error=g.error and g.error[:80],
                              per_turn_grades=g.per_turn_grades,
                              metadata={k: v for k, v in g.metadata.items() if k in _GATE_READS})
                  for name, g in result.grades.items()}
        slim = result.model_copy(update={"trajectory": Trajectory(), "input": "", "grades": grades})
        self._items.append((self.clock(), slim))

    def _current(self) -> list[SampleResult]:
        if self.window.duration is not None:
            now = self.clock()
            while self._items and now - self._items[0][0] > self.window.duration:
                self._items.popleft()
        return [r for _, r in self._items]

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
