"""Deterministic checks of every recorded tool call against the calling agent's `tools_available`.

Reuses the tool-schema grader's vocabulary: `json_values.check_value` (the arguments against the tool's JSON
Schema, reporting parameters outside `properties` as hallucinated) and `tool_schema.SEVERITY`
(a tool the agent was never given is HIGH, a security problem; a bad parameter is MEDIUM, a correctness one).
Kinds are upper-cased: UNAUTHORIZED_TOOL, HALLUCINATED_PARAMETER, MISSING_REQUIRED, TYPE_MISMATCH, INVALID_VALUE.
"""

from __future__ import annotations

from collections import Counter

from evals_cli.graders.tool_schema import SEVERITY
from evals_cli.json_values import check_value
from evals_cli.sessions.models import AgentInteraction, AgentSession, ToolCallRecord
from evals_cli.sessions.results import ToolValidation, ToolViolation

# what one call is worth to tool_use: clean 1, only MEDIUM problems 0.5, any HIGH problem 0
CALL_VALUE = {None: 1.0, "MEDIUM": 0.5, "HIGH": 0.0}


def owners(session: AgentSession) -> dict[str, list[str]]:
    """Tool name -> the agents allowed to call it."""
    found: dict[str, list[str]] = {}
    for agent in session.agents:
        for name in agent.tool_names:
            found.setdefault(name, []).append(agent.agent_id)
    return found


def check_call(session: AgentSession, turn_index: int, agent_id: str, step_index: int,
               call: ToolCallRecord) -> list[ToolViolation]:
    """Every violation of one call."""

    def one(kind: str, detail: str) -> ToolViolation:
        return ToolViolation(turn_index=turn_index, agent_id=agent_id, step_index=step_index, tool=call.tool_name,
                             kind=kind.upper(), severity=SEVERITY.get(kind, "MEDIUM"), detail=detail)

    agent = session.agent(agent_id)
    tools = {t.name: t for t in agent.tools_available}
    if call.tool_name not in tools:
        allowed = ", ".join(tools) or "none"
        owned = owners(session).get(call.tool_name)
        whose = f"; it belongs to {', '.join(owned)}" if owned else "; no agent of the session has it"
        return [one("unauthorized_tool", f"{agent_id} may call {allowed}, not {call.tool_name!r}{whose}")]
    schema = tools[call.tool_name].json_schema()  # a name map is checked by its keys
    return [one(kind, detail) for kind, detail in check_value(call.parameters, schema, "")]


def interaction_violations(session: AgentSession, turn_index: int,
                           interaction: AgentInteraction) -> list[list[ToolViolation]]:
    """The violations of each tool call of an interaction, in call order."""
    return [check_call(session, turn_index, interaction.agent_id, step, call) for step, call in interaction.tool_calls]


def worst(violations: list[ToolViolation]) -> str | None:
    severities = {v.severity for v in violations}
    return "HIGH" if "HIGH" in severities else ("MEDIUM" if severities else None)


def tool_use_deterministic(per_call: list[list[ToolViolation]]) -> float | None:
    """Mean call value (clean 1, MEDIUM 0.5, HIGH 0); None when the interaction made no call."""
    if not per_call:
        return None
    return sum(CALL_VALUE[worst(v)] for v in per_call) / len(per_call)


def validate_session(session: AgentSession) -> ToolValidation:
    """All calls of the session checked, with counts by severity."""
    calls = violating = 0
    found: list[ToolViolation] = []
    for t, turn in enumerate(session.turns):
        for interaction in turn.agent_interactions:
            for problems in interaction_violations(session, t, interaction):
                calls += 1
                violating += bool(problems)
                found += problems
    severities = Counter(v.severity for v in found)
    return ToolValidation(calls=calls, violating_calls=violating, violations=found, by_severity=dict(severities))
