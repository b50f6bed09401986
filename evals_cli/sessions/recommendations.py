"""Rules from scores to advice. Plain rules over the measured numbers (thresholds in `target.thresholds`),
so a recommendation can always be traced back to the score that caused it; the number is in the sentence."""

from __future__ import annotations

from evals_cli.sessions.results import AgentScores, ConversationStats
from evals_cli.sessions.spec import Thresholds


def agent_recommendations(agent_id: str, scores: AgentScores, t: Thresholds, loops: int = 0) -> list[str]:
    found = []
    if loops:
        found.append(f"{agent_id} repeats identical calls ({loops} loop(s)): have it use the result it already has, "
                     "and stop or ask the user when a call brings nothing new.")
    if scores.tool_use is not None and scores.tool_use < t.tool_use:
        found.append(f"Consider improving tool selection for {agent_id} (tool use {scores.tool_use:.2f} < "
                     f"{t.tool_use:g}): keep it to its own tools and their declared parameters.")
    if scores.handoff is not None and scores.handoff < t.handoff:
        found.append(f"{agent_id} should pass more context when delegating (handoff {scores.handoff:.2f} < "
                     f"{t.handoff:g}): include the request, identifiers and results so far.")
    if scores.reasoning is not None and scores.reasoning < t.reasoning:
        found.append(f"{agent_id}'s reasoning is weak ({scores.reasoning:.2f} < {t.reasoning:g}): have it plan "
                     "against the task and check tool results before acting.")
    if scores.response_quality is not None and scores.response_quality < t.response_quality:
        found.append(f"{agent_id}'s outputs do not fit its role ({scores.response_quality:.2f} < "
                     f"{t.response_quality:g}): tighten its instructions.")
    return found


def _rate(count: int, conversation: ConversationStats) -> float:
    return count / conversation.total_responses if conversation.total_responses else 0.0


def session_recommendations(conversation: ConversationStats, coordination: float | None, drift: float | None,
                            task_completion: bool | None, t: Thresholds, handoffs: int = 0) -> list[str]:
    """Session-level advice; `handoffs`: how many the session had (no handoff advice for a session without)."""
    found = []
    total = conversation.total_responses
    if coordination is not None and coordination < t.coordination:
        found.append(f"Coordination is weak ({coordination:.2f} < {t.coordination:g}): define clearer roles"
                     + (", which agent owns which tool, and what each handoff must carry." if handoffs
                        else " and which agent owns which tool."))
    n = conversation.rdm_detections
    if n and _rate(n, conversation) >= t.rdm_rate:
        found.append(f"Users frequently correct responses ({n}/{total} turns): check the answer against what "
                     "was asked before replying.")
    n = conversation.ccm_detections
    if n and _rate(n, conversation) >= t.ccm_rate:
        found.append(f"Users re-ask the same question ({n}/{total} turns): improve the completeness of answers.")
    n = conversation.hallucination_detections
    if n and _rate(n, conversation) >= t.hallucination_rate:
        found.append(f"Final answers state facts the tools never returned ({n}/{total} turns): ground answers in "
                     "tool results.")
    if drift is not None and drift > t.intent_drift:
        found.append(f"The agents' work strays from the task (intent drift {drift:.2f} > {t.intent_drift:g}): "
                     + ("restate the task in every handoff." if handoffs
                        else "keep the agent's instructions and tool calls on what the user asked."))
    if task_completion is False:
        found.append("The task was not completed: review the last turn.")
    return found
