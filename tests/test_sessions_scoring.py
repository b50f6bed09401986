"""The weighted formulas on hand-computed cases, renormalisation over the metrics that apply included."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError

from evals_cli.sessions.analysis import analyze_session
from evals_cli.sessions.reader import iter_sessions
from evals_cli.sessions.results import InteractionResult
from evals_cli.sessions.scoring import agent_scores, both, interaction_score, session_overall
from evals_cli.sessions.spec import InteractionWeights, RecordedSessionsTarget, SessionGateSpec, SessionWeights

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = {s.id: s for s in iter_sessions(ROOT / "datasets" / "multi_agent_sessions.jsonl")}
W = InteractionWeights()


def interaction(tool: float | None = None, reasoning: float | None = None, handoff: float | None = None,
                response: float | None = None) -> InteractionResult:
    return InteractionResult(agent_id="a", tool_use_score=tool, reasoning_score=reasoning, handoff_score=handoff,
                             response_quality=response)


def analyze(session_id: str, **target: object):  # type: ignore[no-untyped-def]
    return asyncio.run(analyze_session(SESSIONS[session_id], RecordedSessionsTarget.model_validate(target)))


def test_interaction_score_with_every_metric() -> None:
    # 0.35*0.8 + 0.25*0.6 + 0.20*0.4 + 0.20*1.0 = 0.28 + 0.15 + 0.08 + 0.20
    assert interaction_score(interaction(0.8, 0.6, 0.4, 1.0), W) == pytest.approx(0.71)


def test_interaction_score_renormalises_over_the_metrics_that_apply() -> None:
    # reasoning and response quality do not apply: (0.35*0.5 + 0.20*1.0) / (0.35 + 0.20)
    assert interaction_score(interaction(tool=0.5, handoff=1.0), W) == pytest.approx(0.375 / 0.55, abs=1e-6)
    assert interaction_score(interaction(reasoning=0.3), W) == pytest.approx(0.3)  # one metric: itself
    assert interaction_score(interaction(), W) is None  # nothing applies: null, not 0


def test_zero_weight_drops_a_metric() -> None:
    weights = InteractionWeights(reasoning=0)
    # (0.35*1.0 + 0.20*0.0) / 0.55: reasoning 0.0 weighs nothing
    assert interaction_score(interaction(1.0, 0.0, None, 0.0), weights) == pytest.approx(0.35 / 0.55, abs=1e-6)


def test_agent_score_is_weighted_over_its_metric_means() -> None:
    scores = agent_scores("executor", [interaction(tool=1.0), interaction(tool=0.5, handoff=0.0)], W)
    assert (scores.tool_use, scores.handoff, scores.reasoning, scores.interactions_count) == (0.75, 0.0, None, 2)
    # (0.35*0.75 + 0.20*0.0) / 0.55
    assert scores.overall == pytest.approx(0.2625 / 0.55, abs=1e-6)
    assert agent_scores("idle", [], W).overall is None


def test_session_overall_inverts_intent_drift_and_renormalises() -> None:
    # reasoning missing: (0.30*0.5 + 0.25*1.0 + 0.20*0.8 + 0.10*(1-0.2)) / 0.85
    assert session_overall(0.5, 1.0, 0.8, None, 0.2, SessionWeights()) == pytest.approx(0.64 / 0.85, abs=1e-6)
    assert session_overall(1.0, 1.0, 1.0, 1.0, 1.0, SessionWeights()) == pytest.approx(0.9)  # full drift costs 0.10
    assert session_overall(None, None, None, None, None, SessionWeights()) is None
    custom = SessionWeights(conversation=1, tool_use=0, coordination=0, reasoning=0, intent_drift=1)
    assert session_overall(0.5, 0.0, 0.0, 0.0, 0.5, custom) == pytest.approx(0.5)


def test_deterministic_and_judged_parts_are_averaged() -> None:
    assert both(1.0, 0.6) == pytest.approx(0.8)
    assert both(None, 0.6) == 0.6 and both(0.5, None) == 0.5 and both(None, None) is None


def test_weights_must_not_all_be_zero() -> None:
    with pytest.raises(ValidationError, match="add up to 0"):
        InteractionWeights(tool_use=0, reasoning=0, handoff=0, response_quality=0)
    with pytest.raises(ValidationError, match="checks nothing"):
        SessionGateSpec(min_overall_score=None)
    with pytest.raises(ValidationError, match="extra"):
        RecordedSessionsTarget.model_validate({"interaction_weights": {"tool_usage": 1}})


def test_unauthorized_session_overall_by_hand() -> None:
    """conversation 1 (no bad turn); tool use 0 (its only call is HIGH); coordination (1 - 0/1 redundant +
    1 - 1/1 out of role) / 2 = 0.5; reasoning null (no judge); intent drift: 8 of the task's 11 content tokens
    (refund order ord 1002 lamp returned unused 25 00 customer card) appear in the work (lamp, customer and
    card do not) so drift = 3/11."""
    analysis = analyze("refund-unauthorized-tool")
    assert (analysis.conversation_score, analysis.tool_use_score, analysis.coordination_score) == (1.0, 0.0, 0.5)
    assert analysis.reasoning_score is None
    assert analysis.intent_drift_score == pytest.approx(3 / 11, abs=1e-6)
    expected = (0.30 * 1.0 + 0.25 * 0.0 + 0.20 * 0.5 + 0.10 * (8 / 11)) / 0.85
    assert analysis.overall_score == pytest.approx(expected, abs=1e-6)
    planner = analysis.per_agent_scores["planner"]
    assert (planner.overall, planner.tool_use) == (0.0, 0.0)
    assert analysis.per_agent_scores["executor"].overall is None  # never acted: null, not 0


def test_medium_violation_counts_half_a_call() -> None:
    executor = analyze("refund-hallucinated-parameter").per_agent_scores["executor"]
    assert executor.tool_use == 0.75  # (1 clean + 0.5 for the call with a MEDIUM problem) / 2


def test_coordination_by_hand() -> None:
    # 4 calls, 1 redoing another agent's; no out-of-role call; 2 handoffs, none lost: (0.75 + 1 + 1) / 3
    assert analyze("refund-reviewer-redoes").coordination_score == pytest.approx(2.75 / 3, abs=1e-6)
    assert analyze("refund-lost-handoff").coordination_score == 0.0  # only signal: 1 of 1 handoffs lost


def test_conversation_score_and_turn_counts() -> None:
    analysis = analyze("refund-user-corrects")
    c = analysis.conversation
    assert (c.total_responses, c.good_responses, c.bad_responses, c.rdm_detections, c.ccm_detections) == (2, 1, 1, 1, 0)
    assert analysis.conversation_score == 0.5


def test_custom_weights_and_thresholds_change_the_outcome() -> None:
    base = analyze("refund-user-corrects")
    only_conversation = analyze("refund-user-corrects", session_weights={
        "conversation": 1, "tool_use": 0, "coordination": 0, "reasoning": 0, "intent_drift": 0})
    assert only_conversation.overall_score == 0.5 and base.overall_score != 0.5
    strict = analyze("refund-hallucinated-parameter", thresholds={"tool_use": 0.8})
    assert any("tool selection for executor" in r for r in strict.recommendations)
    assert not any("tool selection" in r for r in analyze("refund-hallucinated-parameter").recommendations)


def test_recommendations_follow_the_rules() -> None:
    assert any(r.startswith("planner should pass more context when delegating")
               for r in analyze("refund-lost-handoff").recommendations)
    corrected = analyze("refund-user-corrects").recommendations
    assert any("Users frequently correct responses (1/2 turns)" in r for r in corrected)
    assert any("Users re-ask the same question (1/2 turns)" in r for r in analyze("refund-user-reasks").recommendations)
    assert any(r.startswith("Coordination is weak (0.50") for r in analyze("refund-unauthorized-tool").recommendations)
    relaxed = analyze("refund-user-corrects", thresholds={"rdm_rate": 0.6})  # 1/2 = 0.5 < 0.6: no longer "frequent"
    assert not any("correct responses" in r for r in relaxed.recommendations)
