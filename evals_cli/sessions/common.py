"""A recorded-sessions run in the results format of every run: one `SampleResult` per session, a `RunSummary`,
and the common gate, so `evals report`, the HTML report, JUnit and the history read it like any other run.

Each session is the sample of `episode.session_sample`, its trajectory the recording replayed, carrying the
analysis the run made of it. Its grades are those of the registered session graders (sessions/graders.py): the
session, turn and agent scores read off that analysis (judged when a judge is configured), the detectors run on
the recording. The `overall` grade keeps the whole analysis in its metadata (`results.ANALYSIS`), so the
sessions view of `evals analyze` (`sessions.view`: `--json`, the Rich view, the HTML report) is rebuilt from the
common results (`analysis_of`).

The session gate (`target.gate`) becomes the common gate: each check a `simple` gate on one grader, joined by
`and`: min_overall_score the mean of `overall`, min_task_completion_rate the mean of `task_completion` (1 or 0,
sessions without a verdict left out), min_agent_score the minimum of `lowest_agent`. Each compares with `gte` and
the gate's float tolerance, as the session gate did; a session passes when it meets every check.
"""

from __future__ import annotations

from typing import Any

from evals_cli.gate.gate import Gate
from evals_cli.graders.base import GradeContext, Grader, GraderContext
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import ErrorInfo, Grade, SampleResult
from evals_cli.models.specs import AnyGate, GateSpec, LogicalGate, SimpleGate
from evals_cli.sessions.episode import session_sample, session_trajectory
from evals_cli.sessions.graders import SessionDetectorGrader, SessionDetectorSpec, SessionScoreGrader, SessionScoreSpec
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.results import ANALYSIS, SessionAnalysis
from evals_cli.sessions.spec import RecordedSessionsTarget, SessionGateSpec

SCORES = ("overall", "conversation", "tool_use", "reasoning", "coordination", "intent_drift", "task_completion")
DETECTORS = ("ccm", "rdm", "hallucination", "unauthorized_tool", "hallucinated_parameter")
GRADER_OF: dict[type[GraderBase], type[Grader[Any]]] = {SessionScoreSpec: SessionScoreGrader,
                                                        SessionDetectorSpec: SessionDetectorGrader}


def grader_specs(target: RecordedSessionsTarget) -> dict[str, GraderBase]:
    """The graders of a recorded-sessions run, by name: the session scores, the turns, the lowest agent, the
    detectors (tuned by the suite's thresholds)."""
    weights = {"interaction_weights": target.interaction_weights, "session_weights": target.session_weights,
               "thresholds": target.thresholds}
    specs: dict[str, GraderBase] = {name: SessionScoreSpec(metric=name, **weights) for name in SCORES}
    specs["turns"] = SessionScoreSpec(level="turn", **weights)
    specs["lowest_agent"] = SessionScoreSpec(level="agent", **weights)
    t = target.thresholds
    for name in DETECTORS:
        specs[name] = SessionDetectorSpec(detector=name, ccm_similarity=t.ccm_similarity,
                                          correction_phrases=t.correction_phrases)
    return specs


def gate_spec(spec: SessionGateSpec) -> AnyGate:
    """The session gate as the common gate (see the module's docstring)."""
    checks: list[AnyGate] = []
    if spec.min_overall_score is not None:
        checks.append(SimpleGate(metric_key="overall", value=spec.min_overall_score))
    if spec.min_task_completion_rate is not None:
        checks.append(SimpleGate(metric_key="task_completion", value=spec.min_task_completion_rate))
    if spec.min_agent_score is not None:
        checks.append(SimpleGate(metric_key="lowest_agent", aggregation="min", value=spec.min_agent_score))
    if len(checks) == 1:
        return checks[0]
    return LogicalGate(operator="and", gates=checks)


def session_gate(target: RecordedSessionsTarget) -> Gate:
    specs = grader_specs(target)
    return Gate(GateSpec.model_validate(gate_spec(target.gate).model_dump()), specs)


class SessionGrading:
    """Grades one analysed session into a `SampleResult` with the run's gate."""

    def __init__(self, target: RecordedSessionsTarget, context: GraderContext) -> None:
        self.specs = grader_specs(target)
        self.gate = session_gate(target)
        self.graders = {name: GRADER_OF[type(spec)](name, spec, context) for name, spec in self.specs.items()}

    async def result(self, session: AgentSession, analysis: SessionAnalysis) -> SampleResult:
        sample, trajectory = session_sample(session, analysis), session_trajectory(session)
        result = SampleResult(sample_id=session.id, input=session.task, trajectory=trajectory, cost=session.total_cost,
                              latency_s=(session.total_latency_ms or 0.0) / 1000)
        if analysis.error is not None:  # an analysis that failed is an errored sample, never a zero
            result.error = ErrorInfo(category="internal", message=analysis.error)
            return result
        ctx = GradeContext(sample=sample, trajectory=trajectory, view=trajectory, turn=None, ground_truth=None)
        grades: dict[str, Grade] = {name: await grader.grade(ctx) for name, grader in self.graders.items()}
        grades["overall"].metadata[ANALYSIS] = analysis.model_dump(mode="json")
        result.grades = grades
        verdict = await self.gate.ajudge_sample(grades, trajectory, sample)
        result.score, result.passed, result.failed_by = verdict.score, verdict.passed, verdict.failed_by
        result.score_note = verdict.note
        if verdict.incomplete is not None:
            result.error = verdict.incomplete
        return result
