"""What a sessions evaluation finds: a `SessionAnalysis` per session (kept in its common results line: `ANALYSIS`,
`analysis_of`) and the `SessionsSummary` folded from them, which `evals analyze` prints (`sessions.view`); the
runs it wrote before the common format hold them as results lines and summary.json, and are still read.

Every score is in [0, 1] or null, and null means "does not apply" or "could not be measured" (a judge that
failed): never read it as 0. The schema shipped as `analysis.schema.json` is generated from `SessionAnalysis`
with every key required, because every key is always written.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from evals_cli.models.base import Record
from evals_cli.models.results import SampleResult, SummaryBase, Verdict

SCHEMA_VERSION = 1
ANALYSIS = "session_analysis"
"""The key of the `overall` grade's metadata, in a recorded session's common results line (`sessions.common`), that
holds the session's whole analysis (a `SessionAnalysis`); also that of the session's sample's metadata, which
hands the analysis to the session graders (`sessions.episode`)."""
Severity = Literal["HIGH", "MEDIUM"]
DetectionType = Literal["ccm", "rdm", "hallucination", "llm_judge", "none"]
Score = float | None


def unit(description: str) -> Any:
    """A [0, 1] score field, null by default (does not apply / not measured)."""
    return Field(default=None, ge=0.0, le=1.0, description=description)


class Out(Record):
    """Tolerant on read (forward compatibility); every field required in the schema (always written)."""

    model_config = ConfigDict(extra="ignore", json_schema_serialization_defaults_required=True)


class ToolViolation(Out):
    turn_index: int
    agent_id: str
    step_index: int
    tool: str
    kind: str = Field(description="UNAUTHORIZED_TOOL, HALLUCINATED_PARAMETER, MISSING_REQUIRED, TYPE_MISMATCH, "
                                  "INVALID_VALUE.")
    severity: Severity
    detail: str


class ToolValidation(Out):
    calls: int = 0
    violating_calls: int = 0
    violations: list[ToolViolation] = Field(default_factory=list)
    by_severity: dict[str, int] = Field(default_factory=dict)


class LatencyStats(Out):
    count: int = 0
    total_ms: float = 0.0
    p50_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None


class TurnLatency(LatencyStats):
    turn_index: int


class SlowestStep(Out):
    name: str = Field(description="e.g. 'turn 2 · executor · issue_refund'.")
    kind: Literal["interaction", "tool_call"]
    turn_index: int
    agent_id: str
    tool: str | None = None
    latency_ms: float


class SessionLatency(Out):
    total_ms: float | None = Field(default=None, description="total_latency_ms, else the sum of interactions.")
    per_agent: dict[str, LatencyStats] = Field(default_factory=dict, description="Over the agent's interactions.")
    per_turn: list[TurnLatency] = Field(default_factory=list, description="Over each turn's interactions.")
    per_tool: dict[str, LatencyStats] = Field(default_factory=dict, description="Over each tool's calls.")
    slowest_interaction: SlowestStep | None = None
    slowest_tool_call: SlowestStep | None = None


class InteractionResult(Out):
    agent_id: str
    score: Score = unit("Weighted mean of the metrics below that apply.")
    tool_use_score: Score = unit("Deterministic call validity, averaged with the judge when asked.")
    reasoning_score: Score = unit("Judge; only for interactions with thoughts.")
    handoff_score: Score = unit("Entity coverage of the handoff context, averaged with the judge when asked.")
    response_quality: Score = unit("Judge: output fit for the role.")
    handoff_to: str | None = None
    notes: list[str] = Field(default_factory=list, description="Judge reasons and deterministic findings.")


class Detection(Out):
    type: Literal["ccm", "rdm", "hallucination", "llm_judge"]
    confidence: float = Field(ge=0.0, le=1.0)
    source: Literal["deterministic", "judge"]
    evidence: str
    overruled_by_judge: bool = Field(default=False, description="The judge found the turn good: the detection is "
                                     "kept for review but does not make the turn bad (see judge_confirms).")
    judge_reason: str | None = Field(default=None, description="The judge's reason, when it overruled.")
    stated_by_user: bool = Field(default=False, description="The user said it in so many words (an explicit "
                                 "correction: \"that's wrong\", \"not what I asked\", a suite's correction_phrases): "
                                 "the judge cannot overrule it, only inferred detections.")


class TurnResult(Out):
    turn_index: int
    is_bad: bool
    detection_type: DetectionType
    confidence: float = Field(ge=0.0, le=1.0, description="Confidence in the verdict (heuristic, not a probability).")
    detections: list[Detection] = Field(default_factory=list)
    reason: str = ""
    interactions: list[InteractionResult] = Field(default_factory=list)


class AgentScores(Out):
    role: str = ""
    overall: Score = unit("Weighted mean of the agent's metric means that apply.")
    tool_use: Score = unit("Mean over the agent's interactions.")
    reasoning: Score = unit("Mean over the agent's interactions.")
    handoff: Score = unit("Mean over the agent's interactions.")
    response_quality: Score = unit("Mean over the agent's interactions.")
    interactions_count: int = 0
    issues: list[str] = Field(default_factory=list)
    recommendations: list[str] = Field(default_factory=list)


class ConversationStats(Out):
    total_responses: int = 0
    good_responses: int = 0
    bad_responses: int = 0
    ccm_detections: int = 0
    rdm_detections: int = 0
    hallucination_detections: int = 0
    llm_judge_detections: int = 0
    overruled_detections: int = Field(default=0, description="Deterministic detections the judge overruled (the "
                                       "turn counted good); counted apart from the kinds above.")


class Coordination(Out):
    score: Score = unit("Deterministic signals, averaged with the judge when asked.")
    deterministic_score: Score = unit("Mean of redundancy, handoff integrity and role adherence that apply.")
    judge_score: Score = unit("The judge's coordination verdict.")
    redundant_calls: list[str] = Field(default_factory=list, description="Calls redoing another agent's call.")
    lost_handoffs: list[str] = Field(default_factory=list, description="Handoffs whose context lost the task.")
    out_of_role_calls: list[str] = Field(default_factory=list, description="Calls outside the agent's tools.")
    repeated_calls: list[str] = Field(default_factory=list, description="Calls one agent made again and again in a "
                                      "turn, with the same parameters (a loop); not in the score.")
    reason: str = ""


class JudgeInfo(Out):
    model: str | None = None
    calls: int = 0
    errors: list[str] = Field(default_factory=list, description="Judge calls that gave no verdict (metric left null).")
    prompt_tokens: int = 0
    completion_tokens: int = 0


class SessionAnalysis(Out):
    """A session analysed at session, turn and agent level (an item of `evals analyze --json`'s sessions)."""

    schema_version: int = SCHEMA_VERSION
    session_id: str
    task: str = ""
    overall_score: Score = unit("Weighted mean of the session metrics that apply.")
    conversation_score: Score = unit("good_responses / total_responses.")
    tool_use_score: Score = unit("Mean tool-use score of all interactions.")
    reasoning_score: Score = unit("Mean reasoning score of all interactions.")
    coordination_score: Score = unit("= coordination.score.")
    intent_drift_score: Score = unit("How far the work strayed from the task; lower is better.")
    task_completion: bool | None = None
    task_completion_source: Literal["judge", "deterministic"] | None = None
    per_agent_scores: dict[str, AgentScores] = Field(default_factory=dict)
    turn_results: list[TurnResult] = Field(default_factory=list)
    conversation: ConversationStats = Field(default_factory=ConversationStats)
    coordination: Coordination = Field(default_factory=Coordination)
    latency: SessionLatency = Field(default_factory=SessionLatency)
    tool_validation: ToolValidation = Field(default_factory=ToolValidation)
    recommendations: list[str] = Field(default_factory=list)
    judge: JudgeInfo = Field(default_factory=JudgeInfo)
    total_cost: float | None = None
    error: str | None = Field(default=None, description="Why the session could not be analysed (a bug).")


class GateCheck(Out):
    name: str
    metric: float | None
    value: float
    passed: bool | None
    detail: str = ""


class SessionGateResult(Out, Verdict):
    checks: list[GateCheck] = Field(default_factory=list)


class AgentMinimum(Out):
    session_id: str
    agent_id: str
    score: float


class SessionsSummary(Out, SummaryBase):
    """The summary `evals analyze` prints: folded from the analyses, its verdict the common gate's."""

    schema_version: int = SCHEMA_VERSION
    name: str
    dataset: str = ""
    sessions: int = 0
    errored: int = 0
    mean_overall_score: float | None = None
    task_completion_rate: float | None = None
    min_agent: AgentMinimum | None = None
    per_agent_mean: dict[str, float | None] = Field(default_factory=dict)
    conversation: ConversationStats = Field(default_factory=ConversationStats)
    violations_by_severity: dict[str, int] = Field(default_factory=dict)
    judge: JudgeInfo = Field(default_factory=JudgeInfo)
    gate: SessionGateResult | None = None
    status: Literal["completed", "aborted"] = "completed"


def analysis_of(result: SampleResult) -> SessionAnalysis | None:
    """The analysis a common results line of a recorded-sessions run keeps (None: not a recorded session's line).
    A session that could not be analysed is an errored line without grades: its analysis was only the error, so
    it is rebuilt from the line (the session, its task, the error), as the run made it."""
    grade = result.grades.get("overall")
    raw = grade.metadata.get(ANALYSIS) if grade is not None else None
    if raw is not None:
        return SessionAnalysis.model_validate(raw)
    if result.error is not None and result.error.category == "internal" and not result.grades:
        return SessionAnalysis(session_id=result.sample_id, task=result.input, error=result.error.message)
    return None
