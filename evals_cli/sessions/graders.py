"""Grader kinds of recorded multi-agent sessions: the turn-level detectors and the session, turn and agent scores.

They grade a sample that carries its recording (`evals_cli.sessions.episode`: a recorded session replayed as an
episode), because what they check has no place in a trajectory: the agents' roles and allowed tools, their
thoughts, the contexts handed over. A sample without one is "not applicable", never a zero.

- `session_detector`: one detector of `sessions/detectors.py` or `sessions/tool_validation.py`. The turn
  detectors (ccm: the user re-asks, rdm: the user corrects, hallucination: facts in no tool result) score the
  share of turns they did not flag, with a turn grade each; the tool detectors (unauthorized_tool,
  hallucinated_parameter, missing_required, type_mismatch, invalid_value) the share of calls without one.
- `session_score`: a score of the session's analysis at one of its three levels: `session` (overall,
  conversation, tool_use, reasoning, coordination, intent_drift, task_completion), `turn` (the share of turns not
  bad, a turn grade each) or `agent` (one agent's overall, or the lowest agent's when `agent` is not set). The
  analysis (`sessions/analysis.py`, judged when the run has a judge) is made once per session for all the
  scores of a run by the `SessionAnalyser` its suite hands them in their specs (`sessions/analyser.py`: the
  builder hands it in, these never analyse); the `overall` score keeps it whole in its grade's metadata
  (`results.ANALYSIS`). A sample that carries its analysis (`episode.session_analysis`) is graded on that one; a
  recording with neither is an error, never a score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr

from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade, TurnGrade
from evals_cli.sessions.spec import InteractionWeights, SessionWeights, Thresholds
from evals_cli.wording import plural

if TYPE_CHECKING:
    from evals_cli.endpoints.resolve import Endpoint
    from evals_cli.sessions.models import AgentSession
    from evals_cli.sessions.results import Detection, SessionAnalysis

# The detectors and the episode reader are imported where a grade is made: every run imports this
# module (discovering the grader kinds builds the suite's union: `registry.ELSEWHERE` names it beside
# evals_cli.graders.kinds, which never imports the sessions), and most never grade a recorded session.

TurnDetector = Literal["ccm", "rdm", "hallucination"]
ToolDetector = Literal["unauthorized_tool", "hallucinated_parameter", "missing_required", "type_mismatch",
                       "invalid_value"]
NO_RECORDING = "not a recorded session: nothing to check"
NOT_ANALYSED = ("a recorded session without its analysis: session_score grades the analysis a recorded-sessions run "
                "makes (evals analyze, evals run on a recorded_sessions suite)")


class SessionDetectorSpec(GraderBase):
    """One detector of recorded sessions, as a grader."""

    kind: Literal["session_detector"] = "session_detector"
    detector: TurnDetector | ToolDetector = Field(description="ccm, rdm, hallucination (turns); unauthorized_tool, "
                                                  "hallucinated_parameter, missing_required, type_mismatch, "
                                                  "invalid_value (tool calls).")
    ccm_similarity: float = Field(default=0.6, ge=0.0, le=1.0, description="ccm: similarity that means a re-ask.")
    correction_phrases: list[str] = Field(default_factory=list, description="rdm: extra correction phrases.")


def _turn_detection(spec: SessionDetectorSpec, session: AgentSession, t: int) -> Detection | None:
    from evals_cli.sessions.detectors import detect_ccm, detect_hallucination, detect_rdm

    if spec.detector == "ccm":
        return detect_ccm(session, t, spec.ccm_similarity)[0]
    if spec.detector == "rdm":
        return detect_rdm(session, t, spec.correction_phrases)
    return detect_hallucination(session, t)


def _checked_turns(spec: SessionDetectorSpec, session: AgentSession) -> list[int]:
    """The turns the detector can judge: ccm and rdm need the user's next message, hallucination a tool result."""
    turns = range(len(session.turns))
    if spec.detector in ("ccm", "rdm"):
        return list(turns)[:-1]
    return [t for t in turns if any(i.tool_calls for i in session.turns[t].agent_interactions)]


@GRADERS.register("session_detector", spec=SessionDetectorSpec)
class SessionDetectorGrader(Grader[SessionDetectorSpec]):
    async def grade(self, ctx: GradeContext) -> Grade:
        from evals_cli.sessions.episode import recorded_session

        session = recorded_session(ctx.sample)
        if session is None:
            return Grade(score=1.0, applicable=False, rationale=NO_RECORDING)
        if self.spec.detector in ("ccm", "rdm", "hallucination"):
            return self._turns(session)
        return self._calls(session)

    def _turns(self, session: AgentSession) -> Grade:
        checked = _checked_turns(self.spec, session)
        if not checked:
            return Grade(score=1.0, applicable=False, rationale=f"{self.spec.detector}: no turn to check")
        per_turn = []
        for t in checked:
            found = _turn_detection(self.spec, session, t)
            per_turn.append(TurnGrade(turn=t, score=0.0 if found else 1.0, rationale=found.evidence if found else ""))
        flagged = [g for g in per_turn if g.score == 0.0]
        why = "; ".join(f"turn {g.turn + 1}: {g.rationale}" for g in flagged)
        return Grade(score=1 - len(flagged) / len(per_turn), per_turn_grades=per_turn,
                     metadata={"detector": self.spec.detector},
                     rationale=f"{self.spec.detector}: {len(flagged)}/{plural(len(per_turn), 'turn')} flagged"
                               + (f" ({why})" if why else ""))

    def _calls(self, session: AgentSession) -> Grade:
        from evals_cli.sessions.tool_validation import interaction_violations

        # counted call by call: a step index restarts in every interaction, so two bad calls of one agent in one
        # turn (before and after a handoff) are two calls, never one
        wanted = self.spec.detector.upper()
        calls = bad = 0
        found = []
        for t, turn in enumerate(session.turns):
            for interaction in turn.agent_interactions:
                for problems in interaction_violations(session, t, interaction):
                    calls += 1
                    mine = [v for v in problems if v.kind == wanted]
                    bad += bool(mine)
                    found += mine
        if not calls:
            return Grade(score=1.0, applicable=False, rationale=f"{self.spec.detector}: no tool call to check")
        shown = "; ".join(f"turn {v.turn_index + 1} · {v.agent_id} · {v.tool}: {v.detail}" for v in found[:5])
        return Grade(score=1 - bad / calls,
                     metadata={"detector": self.spec.detector, "violations": len(found)},
                     rationale=f"{self.spec.detector}: {bad}/{plural(calls, 'call')} "
                               + (f"({shown})" if shown else "clean"))


SessionMetric = Literal["overall", "conversation", "tool_use", "reasoning", "coordination", "intent_drift",
                        "task_completion"]


class SessionScoreSpec(GraderBase):
    """A score of the session's analysis, at the session, turn or agent level. The weights and thresholds are
    those of the run's target, which made the analysis (`sessions.common.grader_specs`)."""

    kind: Literal["session_score"] = "session_score"
    level: Literal["session", "turn", "agent"] = Field(default="session", description="session: `metric`; turn: "
                                                       "the share of good turns; agent: an agent's overall score.")
    metric: SessionMetric = Field(default="overall", description="level session: which score (intent_drift is "
                                  "graded as 1 - drift, so higher is better like the others).")
    agent: str | None = Field(default=None, description="level agent: the agent (default: the lowest-scoring one).")
    interaction_weights: InteractionWeights = Field(default_factory=InteractionWeights)
    session_weights: SessionWeights = Field(default_factory=SessionWeights)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    # the run's analyser (sessions/analyser.py), shared by every score of a recorded-sessions suite: its builder
    # hands it in (SessionsSuiteSpec.to_suite), so this module never stands on the analysis
    _analyser: Any = PrivateAttr(default=None)


def session_analysis_grade(spec: SessionScoreSpec, a: SessionAnalysis) -> Grade:
    """The grade `spec` reads off an analysis."""
    if a.error is not None:
        return Grade(score=None, error=a.error)
    if spec.level == "turn":
        turns = [TurnGrade(turn=r.turn_index, score=0.0 if r.is_bad else 1.0, rationale=r.reason)
                 for r in a.turn_results]
        good = sum(1 for r in a.turn_results if not r.is_bad)
        return Grade(score=a.conversation_score, per_turn_grades=turns,
                     rationale=f"{good}/{plural(len(turns), 'turn')} not flagged bad")
    if spec.level == "agent":
        scored = {k: v.overall for k, v in a.per_agent_scores.items() if v.overall is not None}
        if spec.agent is not None:
            if spec.agent not in a.per_agent_scores:
                return Grade(score=1.0, applicable=False, rationale=f"agent {spec.agent!r} is not in this session")
            value = a.per_agent_scores[spec.agent].overall
            return Grade(score=value, applicable=value is not None, rationale=f"agent {spec.agent}")
        if not scored:
            return Grade(score=1.0, applicable=False, rationale="no agent scored")
        low = min(scored, key=lambda k: scored[k])
        return Grade(score=scored[low], rationale=f"lowest agent: {low}")
    if spec.metric == "task_completion":
        if a.task_completion is None:
            return Grade(score=1.0, applicable=False, rationale="task completion not measured")
        return Grade(score=float(a.task_completion),
                     rationale=f"task {'completed' if a.task_completion else 'not completed'} "
                               f"({a.task_completion_source})")
    value = {"overall": a.overall_score, "conversation": a.conversation_score, "tool_use": a.tool_use_score,
             "reasoning": a.reasoning_score, "coordination": a.coordination_score,
             "intent_drift": None if a.intent_drift_score is None else round(1 - a.intent_drift_score, 4)}[spec.metric]
    if value is None:  # does not apply (no tool, no thought) or was not measured: never a zero
        return Grade(score=1.0, applicable=False, rationale=f"{spec.metric}: does not apply to this session")
    return Grade(score=value, rationale=f"{spec.metric} {value:.3f}")


@GRADERS.register("session_score", spec=SessionScoreSpec)
class SessionScoreGrader(Grader[SessionScoreSpec]):
    def __init__(self, name: str, spec: SessionScoreSpec, ctx: GraderContext) -> None:
        super().__init__(name, spec, ctx)
        self.analyser = spec._analyser  # None: built on its own, it grades only samples that carry an analysis
        if self.analyser is not None:
            self.analyser.bind(None if ctx.offline else ctx.pool)

    @property
    def endpoints(self) -> list[Endpoint]:
        """The judge the analysis asks (its key is masked in every output of the run)."""
        return list(self.analyser.endpoints) if self.analyser is not None else []

    def incomplete_run(self, max_error_rate: float) -> str | None:
        return self.analyser.incomplete_run(max_error_rate) if self.analyser is not None else None

    async def grade(self, ctx: GradeContext) -> Grade:
        from evals_cli.sessions.episode import recorded_session, session_analysis
        from evals_cli.sessions.results import ANALYSIS

        analysis = session_analysis(ctx.sample)
        if analysis is None:
            session = recorded_session(ctx.sample)
            if session is None:
                return Grade(score=1.0, applicable=False, rationale=NO_RECORDING)
            if self.analyser is None:  # a recording nobody analyses cannot be scored: an error, never a score
                return Grade.failed(NOT_ANALYSED)
            found: SessionAnalysis = await self.analyser.analysis(session, ctx.trajectory)
            analysis = found
        grade = session_analysis_grade(self.spec, analysis)
        if self.spec.level == "session" and self.spec.metric == "overall":  # the analysis, kept whole once
            grade.metadata[ANALYSIS] = analysis.model_dump(mode="json")
        return grade
