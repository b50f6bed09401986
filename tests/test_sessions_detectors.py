"""Each deterministic detector fires on the shipped session built to trigger it, and stays silent on the clean one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evals_cli.sessions.analysis import analyze_session
from evals_cli.sessions.coordination import handoffs, redundant_calls
from evals_cli.sessions.detectors import correction, detect_ccm, detect_hallucination, detect_rdm
from evals_cli.sessions.latency import session_latency
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.reader import iter_sessions
from evals_cli.sessions.spec import RecordedSessionsTarget, Thresholds
from evals_cli.sessions.text import Evidence, facts, similarity
from evals_cli.sessions.tool_validation import validate_session

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = {s.id: s for s in iter_sessions(ROOT / "datasets" / "multi_agent_sessions.jsonl")}
CLEAN = SESSIONS["refund-clean"]


def fired(session: AgentSession) -> set[str]:
    """Every deterministic signal a session raises, by name."""
    signals = {v.kind for v in validate_session(session).violations}
    signals |= {"lost_handoff" for h in handoffs(session, 0.5) if h.lost}
    signals |= {"redundant_call" for _ in redundant_calls(session)}
    for t in range(len(session.turns)):
        signals |= {"ccm" for _ in [detect_ccm(session, t, 0.6)[0]] if _ is not None}
        signals |= {"rdm" for _ in [detect_rdm(session, t)] if _ is not None}
        signals |= {"hallucination" for _ in [detect_hallucination(session, t)] if _ is not None}
    return signals


EXPECTED = {
    "refund-clean": set(),
    "refund-unauthorized-tool": {"UNAUTHORIZED_TOOL"},
    "refund-hallucinated-parameter": {"HALLUCINATED_PARAMETER"},
    "refund-lost-handoff": {"lost_handoff"},
    "refund-user-reasks": {"ccm"},
    "refund-user-corrects": {"rdm"},
    "refund-hallucinated-answer": {"hallucination"},
    "refund-reviewer-redoes": {"redundant_call"},
}


@pytest.mark.parametrize("session_id", sorted(EXPECTED))
def test_each_shipped_session_raises_exactly_its_own_signal(session_id: str) -> None:
    assert fired(SESSIONS[session_id]) == EXPECTED[session_id]


def test_unauthorized_tool_is_high_and_names_the_owner() -> None:
    [violation] = validate_session(SESSIONS["refund-unauthorized-tool"]).violations
    assert (violation.agent_id, violation.tool, violation.kind, violation.severity) == \
        ("planner", "issue_refund", "UNAUTHORIZED_TOOL", "HIGH")
    assert "belongs to executor" in violation.detail


def test_hallucinated_and_missing_parameters_are_medium() -> None:
    [violation] = validate_session(SESSIONS["refund-hallucinated-parameter"]).violations
    assert (violation.kind, violation.severity, violation.step_index) == ("HALLUCINATED_PARAMETER", "MEDIUM", 2)
    assert "priority" in violation.detail
    broken = CLEAN.model_copy(deep=True)
    call = broken.turns[0].agent_interactions[1].agent_steps[3].tool_call
    assert call is not None and call.tool_name == "issue_refund"
    del call.parameters["amount"]
    found = validate_session(broken)
    assert [(v.kind, v.severity) for v in found.violations] == [("MISSING_REQUIRED", "MEDIUM")]
    assert found.calls == 2 and found.violating_calls == 1 and found.by_severity == {"MEDIUM": 1}


def test_lost_handoff_names_the_missing_entities_and_a_good_one_passes() -> None:
    [lost] = handoffs(SESSIONS["refund-lost-handoff"], 0.5)
    assert lost.lost and lost.score == 0.0 and lost.missing == ["ORD-1004", "12.50"]
    assert all(not h.lost and h.score == 1.0 for h in handoffs(CLEAN, 0.5))
    empty = CLEAN.model_copy(deep=True)
    empty.turns[0].agent_interactions[0].handoff_context = None
    [gone] = handoffs(empty, 0.5)
    assert gone.lost and gone.score == 0.0 and "an empty context" in gone.describe()


def test_an_implicit_handoff_without_context_is_lost() -> None:
    """No handoff_to, but the next interaction is another agent's: the work moved on, with nothing passed."""
    implicit = CLEAN.model_copy(deep=True)
    first = implicit.turns[0].agent_interactions[0]
    first.handoff_to, first.handoff_context = None, None
    [found] = handoffs(implicit, 0.5)
    assert (found.source, found.target, found.lost) == ("planner", "executor", True)


def test_ccm_fires_on_a_reasked_question_only() -> None:
    detection, sim = detect_ccm(SESSIONS["refund-user-reasks"], 0, 0.6)
    assert detection is not None and detection.confidence == sim and sim > 0.9
    assert detect_ccm(SESSIONS["refund-user-reasks"], 1, 0.6) == (None, None)  # the last turn has no next message
    clean, sim = detect_ccm(CLEAN, 0, 0.6)
    assert clean is None and sim is not None and sim < 0.3
    assert detect_ccm(SESSIONS["refund-user-corrects"], 0, 0.6)[0] is None  # a correction is not a re-ask


def test_ccm_threshold_is_configurable() -> None:
    _, sim = detect_ccm(CLEAN, 0, 0.6)
    assert detect_ccm(CLEAN, 0, sim)[0] is not None


@pytest.mark.parametrize(("message", "confidence"), [
    ("No, that's wrong. I asked about the headphones.", 0.9),
    ("That is not what I asked for", 0.9),
    ("That’s incorrect, the total was higher", 0.9),
    ("You misunderstood me.", 0.9),
    ("Actually, I meant the red one.", 0.7),
    ("No, the other order please", 0.7),
    ("No, thanks, that's all.", None),
    ("No problem, thank you!", None),
    ("Great, thank you!", None),
    ("What is the refund status of my order?", None),
    ("I know what I want", None),
])
def test_correction_phrases(message: str, confidence: float | None) -> None:
    found = correction(message)
    assert (found[0] if found else None) == confidence


def test_rdm_fires_on_the_corrected_turn_and_extra_phrases_count() -> None:
    detection = detect_rdm(SESSIONS["refund-user-corrects"], 0)
    assert detection is not None and detection.confidence == 0.9 and "that's wrong" in detection.evidence
    assert all(detect_rdm(CLEAN, t) is None for t in range(len(CLEAN.turns)))
    assert detect_rdm(CLEAN, 0, ["great"]) is not None  # target.thresholds.correction_phrases


def test_hallucination_names_the_unsupported_facts() -> None:
    detection = detect_hallucination(SESSIONS["refund-hallucinated-answer"], 0)
    assert detection is not None and "RF-9999" in detection.evidence and "43.99" in detection.evidence
    assert "ORD-1007" not in detection.evidence  # said by the user: supported
    assert detection.confidence == pytest.approx(0.6 + 0.4 * 2 / 3, abs=1e-3)  # 2 of 3 facts unsupported
    assert detect_hallucination(CLEAN, 0) is None
    assert detect_hallucination(SESSIONS["refund-lost-handoff"], 0) is None  # no tool call: nothing to check


def test_facts_from_earlier_turns_support_a_later_answer() -> None:
    """Turn 2 names HP-200, which only turn 1's lookup returned."""
    assert detect_hallucination(SESSIONS["refund-user-corrects"], 1) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("Refunded $1,299.00 for ORD-1001.", {"ORD-1001", "1,299.00"}),
    ("It arrives in 3-5 days, 2 items, step 1", set()),  # small numbers and short ranges are not facts
    ("Shipped on 2024-05-01 at 10:30, 15% off, 0.5 kg", {"2024-05-01", "10:30", "15", "0.5"}),
    ("Order A12 within 24h", {"A12", "24"}),
])
def test_fact_extraction(text: str, expected: set[str]) -> None:
    assert {f.text for f in facts(text)} == expected


def test_evidence_matches_numbers_by_value_and_inside_identifiers() -> None:
    evidence = Evidence(['{"order_id": "ORD-1234", "amount": 1299.0}'])
    supported = {f.text: evidence.supports(f) for f in facts("Order 1234: $1,299.00 refunded as RF-1")}
    assert supported == {"1234": True, "1,299.00": True, "RF-1": False}


def test_similarity_combines_ratio_and_jaccard() -> None:
    assert similarity("What is the refund status of order 5?", "What is the refund status for order 5?") > 0.9
    assert similarity("status of order ORD-1 refund", "refund ORD-1 order status") == 1.0  # reordered
    assert similarity("Please refund my toaster", "Great, thank you!") < 0.4


def test_latency_per_agent_turn_and_tool_with_the_slowest_named() -> None:
    latency = session_latency(SESSIONS["refund-reviewer-redoes"])
    assert latency.total_ms == 7600  # total_latency_ms wins over the sum of interactions
    lookup = latency.per_tool["lookup_order"]
    assert (lookup.count, lookup.total_ms, lookup.p50_ms, lookup.max_ms) == (2, 3240, 1620, 2900)
    assert lookup.p95_ms == pytest.approx(340 + 0.95 * (2900 - 340))
    assert latency.per_agent["reviewer"].total_ms == 4900 and latency.per_turn[0].count == 3
    assert latency.slowest_tool_call is not None and latency.slowest_tool_call.name == "turn 1 · reviewer · lookup_order"
    assert latency.slowest_interaction is not None and latency.slowest_interaction.name == "turn 1 · reviewer"
    no_total = SESSIONS["refund-lost-handoff"]
    assert session_latency(no_total).total_ms == 650 + 900  # no total_latency_ms: the sum of interactions


def test_clean_session_analysis_has_no_issue_at_all() -> None:
    analysis = asyncio.run(analyze_session(CLEAN, RecordedSessionsTarget()))
    assert analysis.recommendations == [] and not any(t.is_bad for t in analysis.turn_results)
    assert all(not s.issues for s in analysis.per_agent_scores.values())
    assert analysis.coordination.redundant_calls == analysis.coordination.lost_handoffs == []
    assert analysis.conversation.bad_responses == 0 and analysis.overall_score == 1.0


def test_thresholds_reject_out_of_range_values() -> None:
    with pytest.raises(ValueError):
        Thresholds(ccm_similarity=1.5)
