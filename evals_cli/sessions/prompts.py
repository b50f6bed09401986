"""What the judge reads for each session metric. Each prompt starts with `Metric: NAME` (one question per
call: small judges answer one question better than five) and ends with the material; the whole prompt is sent
fenced in nonce-tagged data blocks by `judge_metrics`, as the model_judge grader does, so a recorded agent that
wrote "score: 10" into its output cannot grade itself."""

from __future__ import annotations

import json
from typing import Any

from evals_cli.sessions.models import AgentInteraction, AgentSession

LIMIT = 1500  # characters of one tool result shown to the judge


def _dump(value: Any, limit: int = LIMIT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + " …[cut]"


def agents_block(session: AgentSession) -> str:
    lines = ["Agents:"]
    for agent in session.agents:
        tools = ", ".join(agent.tool_names) or "none"
        lines.append(f"- {agent.agent_id}: {agent.role} (tools: {tools})")
    return "\n".join(lines)


def interaction_lines(interaction: AgentInteraction) -> list[str]:
    who = interaction.agent_id
    lines = []
    for step in interaction.agent_steps:
        if step.thought:
            lines.append(f"[{who} thought] {step.thought}")
        if step.tool_call is not None:
            call = step.tool_call
            lines.append(f"[{who} tool call] {call.tool_name}({_dump(call.parameters)})")
            lines.append(f"[tool result] {_dump(call.result)}")
        if step.output:
            lines.append(f"[{who} output] {step.output}")
    if interaction.handoff_to or interaction.handoff_context is not None:
        target = interaction.handoff_to or "the next agent"
        lines.append(f"[{who} → {target} handoff context] {interaction.context_text() or '(empty)'}")
    return lines


def transcript(session: AgentSession, upto_turn: int | None = None) -> str:
    """The session as text: the task, the agents, then every turn (up to `upto_turn` included)."""
    lines = [f"Task: {session.task}", agents_block(session)]
    last = len(session.turns) - 1 if upto_turn is None else upto_turn
    for t, turn in enumerate(session.turns[: last + 1]):
        lines.append(f"--- Turn {t + 1} ---")
        lines.append(f"[user] {turn.user_message}")
        for interaction in turn.agent_interactions:
            lines += interaction_lines(interaction)
        lines.append(f"[final response to the user] {turn.final_response}")
    return "\n".join(lines)


INTERACTION_QUESTIONS = {
    "tool_use": "Did agent {agent} choose the right tools, with sensible parameters, for its part of the work? "
                "Calling a tool outside its own list, inventing parameters or skipping a needed call is poor "
                "tool use. 1 = wrong tools, 10 = exactly the right calls.",
    "reasoning": "Is the reasoning (the thoughts) of agent {agent} sound: grounded in the task and the tool "
                 "results, and leading to its actions? 1 = incoherent or wrong, 10 = clear and correct.",
    "handoff": "Agent {agent} handed the work to {target}. Did the handoff context contain everything {target} "
               "needed (the user's request, identifiers, amounts, results so far) to do its part without asking "
               "again? 1 = nothing useful passed on, 10 = complete.",
    "response_quality": "Is the output of agent {agent} appropriate for its role ({role}): correct, complete and "
                        "useful for the next agent or the user? 1 = unusable, 10 = excellent.",
}


def interaction_prompt(metric: str, session: AgentSession, turn_index: int, index: int, target: str | None) -> str:
    interaction = session.turns[turn_index].agent_interactions[index]
    agent = session.agent(interaction.agent_id)
    question = INTERACTION_QUESTIONS[metric].format(agent=agent.agent_id, role=agent.role, target=target)
    focus = "\n".join(interaction_lines(interaction))
    return (f"Metric: {metric}\nSession: {session.id}, turn {turn_index + 1}, agent {agent.agent_id}\n\n"
            f"{question}\n\nThe session so far:\n{transcript(session, turn_index)}\n\n"
            f"The interaction under review (agent {agent.agent_id}, role: {agent.role}, tools: "
            f"{', '.join(agent.tool_names) or 'none'}):\n{focus}")


TURN_QUESTION = """Was the final response of turn {n} good for the user? Answer with one label:
- "good": it answers the user's message correctly, using the tool results;
- "ccm": not good, and the user's next message re-asks the same question;
- "rdm": not good, and the user's next message corrects or rejects it;
- "hallucination": it states facts absent from, or contradicting, the tool results;
- "bad": not good for another reason."""


def turn_prompt(session: AgentSession, turn_index: int) -> str:
    following = session.turns[turn_index + 1].user_message if turn_index + 1 < len(session.turns) else None
    after = f"The user's next message: {following}" if following is not None else "This was the last turn."
    return (f"Metric: turn\nSession: {session.id}, turn {turn_index + 1}\n\n"
            f"{TURN_QUESTION.format(n=turn_index + 1)}\n\n{transcript(session, turn_index)}\n\n{after}")


SESSION_QUESTIONS = {
    "coordination": "How well did the agents coordinate: a sensible division of labour, each agent acting within "
                    "its role and tools, context passed on at handoffs, no work redone by another agent? "
                    "1 = chaotic, 10 = seamless.",
    "intent_drift": "How closely did the agents' work stay on the task stated at the top (the work, not whether "
                    "it succeeded)? 1 = it wandered off entirely, 10 = every step served the task.",
    "task_completion": "Did the agents complete the task stated at the top by the end of the session? Answer "
                       "pass if the task was done and the user got a correct final answer, fail otherwise.",
}


def session_prompt(metric: str, session: AgentSession) -> str:
    return f"Metric: {metric}\nSession: {session.id}\n\n{SESSION_QUESTIONS[metric]}\n\n{transcript(session)}"
