"""What a run produces: grades, one result per sample, the run summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evals_cli.models.base import Record
from evals_cli.models.trajectory import Trajectory, Usage

SCHEMA_VERSION = 1

ErrorCategory = Literal[
    "endpoint", "auth", "rate_limit", "timeout", "invalid_response", "tool_args", "grader", "judge", "replay", "internal"
]


class TurnGrade(Record):
    """A grade for one user turn of a per-turn sample."""

    turn: int
    score: float | None
    rationale: str = ""
    submission: str = ""
    ground_truth: Any = None


class Grade(Record):
    """A grader's verdict. `score` None means the grader could not grade: never read it as 0."""

    score: float | None
    rationale: str = ""
    per_turn: list[TurnGrade] | None = None
    turns_passed: int | None = None
    turns_total: int | None = None
    submission: str | None = None
    error: str | None = Field(default=None, description="Why there is no score.")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def failed(cls, reason: str, **metadata: Any) -> Grade:
        """A grade that could not be given (error), as opposed to a low score."""
        return cls(score=None, rationale=reason, error=reason, metadata=metadata)


class ErrorInfo(Record):
    """Why a sample could not be run to the end."""

    category: ErrorCategory
    message: str


class SampleResult(Record):
    """One results-JSONL line."""

    schema_version: int = SCHEMA_VERSION
    sample_id: str
    repeat: int = 0
    tags: list[str] = Field(default_factory=list)
    input: str = ""
    trajectory: Trajectory = Field(default_factory=Trajectory)
    grades: dict[str, Grade] = Field(default_factory=dict)
    score: float | None = Field(default=None, description="Weighted score over the gate's graders.")
    passed: bool | None = None
    error: ErrorInfo | None = None
    latency_s: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    judge_usage: Usage = Field(default_factory=Usage)
    cost: float | None = None

    @property
    def tools_called(self) -> list[str]:
        return [call.name for call in self.trajectory.tool_calls]


class GraderAggregate(Record):
    """One grader over the run."""

    count: int = 0
    errors: int = 0
    avg_score: float | None = None
    accuracy: float | None = None
    min: float | None = None
    max: float | None = None
    median: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    accuracy_at: dict[str, float] = Field(
        default_factory=dict,
        description="Accuracy under other per-sample pass rules the gate applies to this grader ('gte 1' -> share), "
        "when a logical gate's sub-gates differ from its first rule.",
    )


class Reliability(Record):
    """Consistency over repeats: a sample passes@k if any of its k runs passed, pass^k if all did."""

    repeats: int
    samples: int
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    mean_pass_rate: float | None = None


class JudgeAgreement(Record):
    """How far a judge grader can be trusted over the run."""

    judges: list[str] = Field(default_factory=list)
    units: int = 0
    alpha: float | None = Field(default=None, description="Krippendorff's alpha (interval) across the panel.")
    unreliable: int = Field(default=0, description="Grades whose verdict spread exceeded max_spread.")


class GateResult(Record):
    """The gate's verdict in numbers and words."""

    passed: bool | None
    metric: float | None
    op: str
    value: float
    aggregation: str
    weights: dict[str, float]
    message: str


class RunSummary(Record):
    """Written once at the end of a run (and rebuilt by `evals report`)."""

    schema_version: int = SCHEMA_VERSION
    suite: str
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0
    total: int = 0
    graded: int = 0
    errored: int = 0
    passed: int = 0
    failed: int = 0
    errors_by_category: dict[str, int] = Field(default_factory=dict)
    graders: dict[str, GraderAggregate] = Field(default_factory=dict)
    gate: GateResult | None = None
    usage: Usage = Field(default_factory=Usage)
    judge_usage: Usage = Field(default_factory=Usage)
    reliability: Reliability | None = None
    judge_agreement: dict[str, JudgeAgreement] = Field(default_factory=dict)
    grades_total: int = 0
    grades_missing: int = Field(default=0, description="Grades with score None (grader or judge errors).")
    cost: float | None = Field(default=None, description="Spend in the pricing table's currency.")
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    status: Literal["completed", "aborted", "interrupted"] = "completed"
    abort_reason: str | None = None
    exit_code: int = 0
