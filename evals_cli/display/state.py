"""What the display knows about a run, folded from results as they arrive."""

from __future__ import annotations

from dataclasses import dataclass, field

from evals_cli.models.results import SampleResult

MAX_ROWS = 200


@dataclass
class Cell:
    score: float | None
    error: bool = False
    turns: tuple[int, int] | None = None


@dataclass
class Row:
    sample_id: str
    tags: list[str]
    tools: list[str]
    cells: dict[str, Cell]
    score: float | None
    passed: bool | None
    error: str | None
    stop_reason: str


@dataclass
class RunState:
    grader_names: list[str]
    total_expected: int | None = None
    done: int = 0
    errored: int = 0
    passed: int = 0
    graded: int = 0
    rows: list[Row] = field(default_factory=list)
    hidden_rows: int = 0

    def add(self, result: SampleResult) -> None:
        self.done += 1
        if result.error is not None:
            self.errored += 1
        elif result.passed is not None:
            self.graded += 1
            self.passed += int(result.passed)
        if len(self.rows) >= MAX_ROWS:
            self.hidden_rows += 1
            return
        cells = {}
        for name, grade in result.grades.items():
            turns = (grade.turns_passed, grade.turns_total) if grade.turns_total else None
            cells[name] = Cell(grade.score, grade.score is None, turns)  # type: ignore[arg-type]
        self.rows.append(Row(result.sample_id, result.tags, result.tools_called, cells, result.score,
                             result.passed, result.error.category if result.error else None,
                             result.trajectory.stop_reason))

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None
