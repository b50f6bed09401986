"""One recorded session → one `SessionAnalysis`: deterministic checks first, then (optionally) the judge, then
the weighted scores and the recommendations. Pure apart from the judge calls, so the same session with the
same judge answers always gives the same analysis."""

from __future__ import annotations

from dataclasses import dataclass, field

from evals_cli.sessions.coordination import (
    Handoff,
    coordination_signals,
    handoffs,
    intent_drift_fallback,
    redundant_calls,
    repeated_calls,
)
from evals_cli.sessions.detectors import combine_turn, deterministic_detections
from evals_cli.sessions.judge_metrics import (
    JudgeLog,
    SessionJudge,
    Verdict,
    ask_all,
    interaction_questions,
    session_questions,
    turn_question,
)
from evals_cli.sessions.latency import session_latency
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.recommendations import agent_recommendations, session_recommendations
from evals_cli.sessions.results import (
    AgentScores,
    ConversationStats,
    InteractionResult,
    SessionAnalysis,
    ToolValidation,
    TurnResult,
)
from evals_cli.sessions.scoring import METRICS, agent_scores, both, interaction_score, mean, rounded, session_overall
from evals_cli.sessions.spec import RecordedSessionsTarget
from evals_cli.sessions.tool_validation import interaction_violations, tool_use_deterministic, validate_session

Position = tuple[int, int]  # (turn index, interaction index)


@dataclass
class Judged:
    """The judge's verdicts for one session (empty when no judge is used)."""

    interactions: dict[Position, dict[str, Verdict | None]] = field(default_factory=dict)
    turns: dict[int, Verdict | None] = field(default_factory=dict)
    session: dict[str, Verdict | None] = field(default_factory=dict)


def applicable(session: AgentSession, position: Position, found: dict[Position, Handoff]) -> dict[str, bool]:
    """Which interaction metrics apply: tool use to agents with tools (or calls), reasoning to interactions with
    thoughts, handoff to interactions that hand off, response quality to interactions that produce text."""
    t, i = position
    turn = session.turns[t]
    interaction = turn.agent_interactions[i]
    last = i == len(turn.agent_interactions) - 1
    return {
        "tool_use": bool(session.agent(interaction.agent_id).tools_available or interaction.tool_calls),
        "reasoning": bool(interaction.thoughts),
        "handoff": position in found,
        "response_quality": bool(interaction.outputs) or (last and bool(turn.final_response.strip())),
    }


async def ask_judge(session: AgentSession, target: RecordedSessionsTarget, judge: SessionJudge, log: JudgeLog,
                    found: dict[Position, Handoff]) -> Judged:
    wanted = target.judge_metrics
    jobs: list[tuple[Position, dict[str, str | None]]] = []
    for t, turn in enumerate(session.turns):
        for i in range(len(turn.agent_interactions)):
            applies = applicable(session, (t, i), found)
            ask = {m: (found[(t, i)].target if m == "handoff" else None) for m in METRICS
                   if applies[m] and getattr(wanted, m)}
            if ask:
                jobs.append(((t, i), ask))
    per_session = [m for m in ("coordination", "intent_drift", "task_completion") if getattr(wanted, m)]
    turns = range(len(session.turns)) if wanted.turn else range(0)
    questions = [q for (t, i), ask in jobs for q in interaction_questions(session, t, i, ask)]
    questions += [turn_question(session, t) for t in turns] + session_questions(session, per_session)
    answers = await ask_all(judge, log, questions)
    return Judged(interactions={(t, i): {m: answers[("interaction", t, i, m)] for m in ask} for (t, i), ask in jobs},
                  turns={t: answers[("turn", t)] for t in turns},
                  session={m: answers[("session", m)] for m in per_session})


def _score(verdict: Verdict | None) -> float | None:
    return None if verdict is None else verdict.score


def interaction_result(session: AgentSession, target: RecordedSessionsTarget, position: Position,
                       found: dict[Position, Handoff], judged: dict[str, Verdict | None]) -> InteractionResult:
    t, i = position
    interaction = session.turns[t].agent_interactions[i]
    applies = applicable(session, position, found)
    per_call = interaction_violations(session, t, interaction)
    handoff = found.get(position)
    notes = [f"{v.kind} ({v.severity}) {v.tool}: {v.detail}" for calls in per_call for v in calls]
    if handoff is not None and handoff.lost:
        notes.append(f"handoff lost: {handoff.describe()}")
    notes += [f"judge {m}: {v.label} — {v.reason}" for m, v in judged.items() if v is not None and v.reason]
    result = InteractionResult(
        agent_id=interaction.agent_id,
        tool_use_score=both(tool_use_deterministic(per_call), _score(judged.get("tool_use"))) if applies["tool_use"]
        else None,
        reasoning_score=_score(judged.get("reasoning")) if applies["reasoning"] else None,
        handoff_score=both(handoff.score, _score(judged.get("handoff"))) if handoff is not None else None,
        response_quality=_score(judged.get("response_quality")) if applies["response_quality"] else None,
        handoff_to=handoff.target if handoff is not None else None,
        notes=notes,
    )
    result.score = interaction_score(result, target.interaction_weights)
    return result


def conversation_stats(turns: list[TurnResult]) -> ConversationStats:
    def count(kind: str) -> int:
        # a detection the judge overruled is counted in overruled_detections only, even on a turn that stays bad
        # for another (stated) one
        return sum(1 for turn in turns
                   if turn.is_bad and any(d.type == kind and not d.overruled_by_judge for d in turn.detections))

    bad = sum(1 for turn in turns if turn.is_bad)
    overruled = sum(1 for turn in turns for d in turn.detections if d.overruled_by_judge)
    return ConversationStats(total_responses=len(turns), good_responses=len(turns) - bad, bad_responses=bad,
                             ccm_detections=count("ccm"), rdm_detections=count("rdm"),
                             hallucination_detections=count("hallucination"), llm_judge_detections=count("llm_judge"),
                             overruled_detections=overruled)


def agents(session: AgentSession, target: RecordedSessionsTarget, everything: list[InteractionResult],
           validation: ToolValidation, found_handoffs: list[Handoff]) -> dict[str, AgentScores]:
    """Per agent: its scores over its interactions, the concrete issues behind them, and what to do about it."""
    redone = redundant_calls(session)
    looped = repeated_calls(session)
    per_agent = {}
    for agent in session.agents:
        scores = agent_scores(agent.role, [r for r in everything if r.agent_id == agent.agent_id],
                              target.interaction_weights)
        scores.issues = [f"turn {v.turn_index + 1}: {v.kind} ({v.severity}) {v.tool}: {v.detail}"
                         for v in validation.violations if v.agent_id == agent.agent_id]
        scores.issues += [f"lost handoff: {h.describe()}" for h in found_handoffs if h.lost and h.source == agent.agent_id]
        scores.issues += [text for who, text in redone if who == agent.agent_id]
        loops = [text for who, text in looped if who == agent.agent_id]
        scores.issues += loops
        scores.recommendations = agent_recommendations(agent.agent_id, scores, target.thresholds, loops=len(loops))
        per_agent[agent.agent_id] = scores
    return per_agent


def task_completed(session: AgentSession, turns: list[TurnResult], verdict: Verdict | None) -> tuple[bool, str]:
    """(completed, by whom): the judge's verdict, else (weak) the last turn has an answer and was not flagged; a
    conversation cut off mid-call has no answer in its last turn, so it is never completed."""
    if verdict is not None:
        return verdict.score >= 1.0, "judge"
    return not turns[-1].is_bad and bool(session.turns[-1].final_response.strip()), "deterministic"


async def analyze_session(session: AgentSession, target: RecordedSessionsTarget,
                          judge: SessionJudge | None = None) -> SessionAnalysis:
    """The whole analysis of one session. Without a judge every metric that has a deterministic form gets it and
    the judge-only ones (reasoning, response quality) stay null; with one, each enabled metric is asked once."""
    thresholds = target.thresholds
    validation = validate_session(session)
    found_handoffs = handoffs(session, thresholds.handoff_coverage)
    found = {(h.turn_index, h.index): h for h in found_handoffs}
    coordination = coordination_signals(session, validation, found_handoffs)
    log = judge.log() if judge is not None else JudgeLog(model=None)
    judged = await ask_judge(session, target, judge, log, found) if judge is not None else Judged()

    turn_results = []
    for t, turn in enumerate(session.turns):
        detections, sim = deterministic_detections(session, t, thresholds)
        verdict = judged.turns.get(t)
        result = combine_turn(t, detections, sim, (verdict.label, verdict.reason) if verdict is not None else None,
                              target.judge_confirms)
        result.interactions = [interaction_result(session, target, (t, i), found, judged.interactions.get((t, i), {}))
                               for i in range(len(turn.agent_interactions))]
        turn_results.append(result)
    conversation = conversation_stats(turn_results)

    everything = [r for turn in turn_results for r in turn.interactions]
    per_agent = agents(session, target, everything, validation, found_handoffs)

    coordination.judge_score = _score(judged.session.get("coordination"))
    coordination.score = both(coordination.deterministic_score, coordination.judge_score)
    if judged.session.get("coordination") is not None:
        coordination.reason = judged.session["coordination"].reason  # type: ignore[union-attr]
    focus = judged.session.get("intent_drift")
    drift = rounded(1.0 - focus.score if focus is not None else intent_drift_fallback(session))
    completed, source = task_completed(session, turn_results, judged.session.get("task_completion"))
    conversation_score = rounded(conversation.good_responses / conversation.total_responses)
    tool_use = mean(r.tool_use_score for r in everything)
    reasoning = mean(r.reasoning_score for r in everything)
    recommendations = [rec for scores in per_agent.values() for rec in scores.recommendations]
    recommendations += session_recommendations(conversation, coordination.score, drift, completed, thresholds,
                                               handoffs=len(found_handoffs))
    return SessionAnalysis(
        session_id=session.id, task=session.task,
        overall_score=session_overall(conversation_score, tool_use, coordination.score, reasoning, drift,
                                      target.session_weights),
        conversation_score=conversation_score, tool_use_score=tool_use, reasoning_score=reasoning,
        coordination_score=coordination.score, intent_drift_score=drift,
        task_completion=completed, task_completion_source=source,
        per_agent_scores=per_agent, turn_results=turn_results, conversation=conversation, coordination=coordination,
        latency=session_latency(session), tool_validation=validation, recommendations=recommendations,
        judge=log.info(), total_cost=session.total_cost,
    )
