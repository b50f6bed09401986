"""The rolling gate's verdict over its window, in numbers and words (what /metrics, the alerts and the last
line of `evals watch` say)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from evals_cli.models.results import RunSummary

MAX_WINDOW = 10_000  # results held for the rolling gate whatever the window says (memory stays bounded)
State = Literal["pending", "passed", "failed", "no_verdict"]


@dataclass
class WindowVerdict:
    state: State
    samples: int  # results in the window
    graded: int
    summary: RunSummary
    interval: tuple[float, float] | None = None  # exact 95% interval of the pass rate
    mean_score: float | None = None  # the mean weighted score of the graded conversations
    failing: list[str] = field(default_factory=list)  # ids of the window's failed conversations (newest first)
    capped: bool = False  # the window held more than MAX_WINDOW results: the oldest left out

    @property
    def message(self) -> str:
        gate = self.summary.gate
        said = gate.message if gate is not None else "no gate"
        if self.state == "pending":
            return f"pending: {self.graded} graded conversation(s) in the window, fewer than window.min_samples"
        passed = self.summary.passed
        ci = (f", pass rate {passed}/{self.graded} = {passed / self.graded:.3f} [95% {self.interval[0]:.3f}, "
              f"{self.interval[1]:.3f}]") if self.interval is not None and self.graded else ""
        capped = f" (the last {MAX_WINDOW} only)" if self.capped else ""
        if self.state == "no_verdict":
            return f"no verdict over {self.samples} conversation(s){capped}: {self.summary.abort_reason or said}"
        return f"{self.state}: {said} over {self.samples} conversation(s){capped}{ci}"
