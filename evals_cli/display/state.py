"""What the display knows about a run, folded from results as they arrive: one row per sample, its
repeats merged (mean scores, passes out of runs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evals_cli.models.results import Grade, ReducedSample, SampleResult
from evals_cli.models.trajectory import StateChange, diverged_turn

MAX_ROWS = 200
MAX_REASONS = 3  # distinct reasons kept per row (repeats may fail differently)
MAX_DIFFS = 20  # samples whose final state `evals report` shows; the rest are counted


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def reasons_for(result: SampleResult) -> list[str]:
    """Why this result failed or errored, one short phrase per cause: `answer 0.00: expected "5432" not in
    answer`, `unknown tool: called wipe_disk`, `replay error: replay miss: ...`. Empty for a passed result."""
    if result.error is not None:
        return [_one_line(f"{result.error.category} error: {result.error.message}")]
    if result.passed is not False:
        return []
    reasons: list[str] = []
    for failure in result.failed_by:
        grade = result.grades.get(failure.grader) if failure.grader else None
        if grade is not None:
            reasons.append(_one_line(f"{failure.grader} {_score(grade.score)}: "
                                     f"{grade.rationale or grade.error or failure.reason}".rstrip(": ")
                                     + _failed_replies(grade)))
        elif failure.rule == "weighted":  # the weighted rule: name the graders that pulled the score down
            low = sorted(((g.score, n, g) for n, g in result.grades.items()
                          if g.score is not None and g.applicable and g.score < 0.999), key=lambda t: t[0])
            head = f"weighted {_score(failure.score if failure.score is not None else result.score)}"
            if failure.threshold is not None:
                head += f" < {failure.threshold:g}"
            if not low:
                reasons.append(_one_line(f"{head}: {failure.reason}".rstrip(": ")))
            for score, name, grade in low:
                reasons.append(_one_line(f"{name} {_score(score)}: {grade.rationale}".rstrip(": ")))
        else:
            reasons.append(_one_line(f"{failure.label}: {failure.reason}".rstrip(": ")))
    return list(dict.fromkeys(reasons)) or ["failed"]  # a grader both required and weighted is named once


def _failed_replies(grade: Grade, most: int = 3) -> str:
    """A reply-scoped grade's failing replies, turn by turn (`; reply 2 0.20: rude`): which replies failed is
    what a reader of a per-reply grade needs first."""
    if grade.metadata.get("scope") != "reply" or not grade.per_turn_grades:
        return ""
    failed = set(grade.metadata.get("replies_failed") or [])
    low = [t for t in grade.per_turn_grades if t.turn in failed]
    parts = [f"reply {t.turn + 1} {_score(t.score)}: {_one_line(t.rationale)[:80]}".rstrip(": ") for t in low[:most]]
    if len(low) > most:
        parts.append(f"{len(low) - most} more")
    return "".join(f"; {p}" for p in parts)


@dataclass
class GoalTally:
    """A goal-completion grader over the run: samples judged, goals met, and the turn each was met at."""

    judged: int = 0
    met: int = 0
    turns: list[int] = field(default_factory=list)

    @property
    def mean_turns(self) -> float | None:
        """Turns to success: the mean over the samples whose goal was met at a known turn."""
        return sum(self.turns) / len(self.turns) if self.turns else None


@dataclass
class Divergence:
    """A `--replay-user` conversation that left the recorded path: where, and whether it was stopped there."""

    sample_id: str
    repeat: int
    turn: int
    stopped: bool


@dataclass
class Cell:
    """One grader on one sample over its repeats: the mean of the runs that had something to check."""

    total: float = 0.0
    scored: int = 0  # runs with a score, n/a ones included
    errors: int = 0
    unreliable: int = 0
    not_applicable: int = 0
    turns: tuple[int, int] | None = None

    @property
    def na(self) -> bool:
        """Every run of this grader on this sample had nothing to check: shown as n/a, not as a 1.00."""
        return self.scored > 0 and self.not_applicable == self.scored

    @property
    def score(self) -> float | None:
        """The mean over the runs that had something to check (an n/a run's conventional 1.0 is no result)."""
        checked = self.scored - self.not_applicable
        return self.total / checked if checked else None

    @property
    def error(self) -> bool:
        return self.scored == 0 and self.errors > 0


@dataclass
class Row:
    sample_id: str
    tags: list[str]
    tools: list[str]
    cells: dict[str, Cell] = field(default_factory=dict)
    score_total: float = 0.0
    scored: int = 0
    runs: int = 0
    passes: int = 0
    graded: int = 0
    unchecked: int = 0  # runs with nothing to check (no weighted score, no required grader applied): no verdict
    score_na: bool = False  # a run had no weighted score because every grader it weighs was n/a
    error: str | None = None
    incomplete: bool = False
    failed_by: list[str] = field(default_factory=list)
    stop_reason: str = "completed"
    reasons: list[str] = field(default_factory=list)  # why it failed or errored (see reasons_for)
    # distinct reasons past MAX_REASONS: counted under the table, shown whole by `evals report RUN --why full`
    more_reasons: set[str] = field(default_factory=set)
    reduced: ReducedSample | None = None  # gate.reducer: what the gate counted for the sample (display/reduced.py)
    reducer: str = ""

    @property
    def failing(self) -> bool:
        """Failed or errored in at least one run: listed under the table with its reasons."""
        return self.error is not None or (self.graded > 0 and self.passes < self.graded)

    @property
    def score(self) -> float | None:
        return self.score_total / self.scored if self.scored else None

    @property
    def passed(self) -> bool | None:
        return None if not self.graded else self.passes == self.graded


@dataclass
class StateDiff:
    """How one run of a stateful sample left its world (repeat kept: repeats may leave it differently)."""

    sample_id: str
    repeat: int
    changes: list[StateChange]


@dataclass
class RunState:
    grader_names: list[str]
    total_expected: int | None = None
    repeats: int = 1
    done: int = 0
    errored: int = 0
    passed: int = 0
    graded: int = 0
    rows: dict[str, Row] = field(default_factory=dict)
    hidden_rows: int = 0
    hidden_failing: set[str] = field(default_factory=set)  # failing samples past MAX_ROWS: counted, not shown
    # `evals report` keeps each sample's final-state diff to show under the table; the live view does not (a run
    # prints its table, and the report holds the diffs)
    keep_diffs: bool = False
    diffs: list[StateDiff] = field(default_factory=list)
    hidden_diffs: int = 0
    goals: dict[str, GoalTally] = field(default_factory=dict)  # goal-completion graders: met, turns to success
    divergences: list[Divergence] = field(default_factory=list)  # --replay-user conversations off the path
    replayed: int = 0  # conversations that replayed a recorded user (--replay-user)

    def add(self, result: SampleResult) -> None:
        self.done += 1
        self._conversation(result)
        if self.keep_diffs and result.trajectory.state_changes:
            if len(self.diffs) < MAX_DIFFS:
                self.diffs.append(StateDiff(result.sample_id, result.repeat, result.trajectory.state_changes))
            else:
                self.hidden_diffs += 1
        if result.error is not None:
            self.errored += 1
        elif result.passed is not None:
            self.graded += 1
            self.passed += int(result.passed)
        row = self.rows.get(result.sample_id)
        if row is None:
            if len(self.rows) >= MAX_ROWS:
                self.hidden_rows += 1
                if result.error is not None or result.passed is False:
                    self.hidden_failing.add(result.sample_id)
                return
            row = self.rows[result.sample_id] = Row(result.sample_id, result.tags, result.tools_called)
        self._merge(row, result)

    def _conversation(self, result: SampleResult) -> None:
        """Goal completion (met, at which turn) and --replay-user divergence, from one result."""
        for name, grade in result.grades.items():
            if "goal_met" not in grade.metadata or grade.score is None:
                continue
            tally = self.goals.setdefault(name, GoalTally())
            tally.judged += 1
            if grade.metadata.get("goal_met"):
                tally.met += 1
                turn = grade.metadata.get("turn_of_success")
                if isinstance(turn, int) and not isinstance(turn, bool):
                    tally.turns.append(turn)
        trajectory = result.trajectory
        if any(t.user_source == "replayed" for t in trajectory.turns):
            self.replayed += 1
            turn = diverged_turn(trajectory)
            if turn is not None:
                self.divergences.append(Divergence(result.sample_id, result.repeat, turn,
                                                   trajectory.end_reason == "diverged"))

    @staticmethod
    def _merge(row: Row, result: SampleResult) -> None:
        row.runs += 1
        if result.error is not None:
            row.error = result.error.category
            row.incomplete = result.error.incomplete
            row.stop_reason = result.trajectory.stop_reason
        elif result.trajectory.stop_reason != "completed":
            row.stop_reason = result.trajectory.stop_reason
        if result.passed is not None:
            row.graded += 1
            row.passes += int(result.passed)
        elif result.error is None and result.score_note is not None:
            row.unchecked += 1
        row.score_na = row.score_na or (result.error is None and result.score_note is not None)
        if result.score is not None:
            row.score_total += result.score
            row.scored += 1
        for failure in result.failed_by:
            if failure.label not in row.failed_by:
                row.failed_by.append(failure.label)
        for reason in reasons_for(result):
            if reason in row.reasons:
                continue
            if len(row.reasons) < MAX_REASONS:
                row.reasons.append(reason)
            else:
                row.more_reasons.add(reason)
        for name, grade in result.grades.items():
            cell = row.cells.setdefault(name, Cell())
            cell.unreliable += int(bool(grade.metadata.get("unreliable")))
            if grade.score is None:
                cell.errors += 1
            else:
                cell.scored += 1
                if grade.applicable:
                    cell.total += grade.score
                else:
                    cell.not_applicable += 1
            if grade.turns_total:
                passed, total = cell.turns or (0, 0)
                cell.turns = (passed + (grade.turns_passed or 0), total + grade.turns_total)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def failing_rows(self) -> list[Row]:
        return [row for row in self.rows.values() if row.failing]

    @property
    def failing_count(self) -> int:
        return len(self.failing_rows) + len(self.hidden_failing)
