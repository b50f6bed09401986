"""What grading may spend: judge calls a minute and cost an hour, over sliding windows of what was spent.

A conversation that would start grading over either bound is not graded: it is counted (`over_budget`, per
bound) and named in no result, so no average is made of the conversations the budget happened to let through
without saying how many it did not.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from evals_cli.models.results import Grade, SampleResult

MINUTE, HOUR = 60.0, 3600.0


def judge_calls(result: SampleResult) -> int:
    """The judge calls behind a result's grades: one per verdict asked (per turn, per reply, per panel judge)."""
    return sum(_calls(grade) for grade in result.grades.values() if "usage" in grade.metadata
               or grade.metadata.get("verdicts") or grade.metadata.get("turn_calls"))


def _calls(grade: Grade) -> int:
    per_turn = grade.metadata.get("turn_calls")
    if isinstance(per_turn, list) and per_turn:
        return sum(max(len(call.get("verdicts") or []), 1) for call in per_turn if isinstance(call, dict))
    return max(len(grade.metadata.get("verdicts") or []), 1)


class Budget:
    def __init__(self, calls_per_minute: int | None, cost_per_hour: float | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.calls_per_minute, self.cost_per_hour, self.clock = calls_per_minute, cost_per_hour, clock
        self._calls: deque[tuple[float, int]] = deque()
        self._cost: deque[tuple[float, float]] = deque()
        self.calls = 0  # judge calls made, in all
        self.cost = 0.0

    def over(self) -> str | None:
        """The bound grading one more conversation now would pass (`judge_calls_per_minute`, `cost_per_hour`)."""
        now = self.clock()
        while self._calls and now - self._calls[0][0] >= MINUTE:
            self._calls.popleft()
        while self._cost and now - self._cost[0][0] >= HOUR:
            self._cost.popleft()
        if self.calls_per_minute is not None and sum(n for _, n in self._calls) >= self.calls_per_minute:
            return "judge_calls_per_minute"
        if self.cost_per_hour is not None and sum(c for _, c in self._cost) >= self.cost_per_hour:
            return "cost_per_hour"
        return None

    def spent(self, result: SampleResult) -> None:
        now = self.clock()
        calls = judge_calls(result)
        if calls:
            self._calls.append((now, calls))
            self.calls += calls
        if result.cost:
            self._cost.append((now, result.cost))
            self.cost += result.cost
