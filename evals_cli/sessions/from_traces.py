"""A traced conversation as a recorded multi-agent session (sessions/models.py), so `evals analyze` runs the
same three-level analysis on traces as on session files: each agent with the tools it was offered, each turn's
agent interactions (consecutive model calls of one agent; a nested agent's work after a handoff), every tool
call with its arguments and result.

An agent whose offered tools were never recorded (the OpenTelemetry openai instrumentation does not write
`gen_ai.tool.definitions`; the application's invoke_agent span may) is given the tools it called, unchecked,
and the session's metadata says so: without the list, calling a tool cannot be judged unauthorized, and
flagging every call would be a guess.

A conversation cut off mid-call (stop reason cut_off) is analysed too: its last turn has no final response (the
user got none), so the task is not completed, and its calls are there for the loop and redundancy checks.
"""

from __future__ import annotations

import json
from typing import Any

from evals_cli.models.trajectory import Step
from evals_cli.sessions.models import (
    AgentDefinition,
    AgentInteraction,
    AgentSession,
    AgentStep,
    SessionTurn,
    ToolCallRecord,
    ToolDefinition,
)
from evals_cli.traces.conversations import Conversation


def _result(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _agent_steps(step: Step) -> list[AgentStep]:
    out = [AgentStep(tool_call=ToolCallRecord(
        tool_name=call.name or "?",
        parameters=call.arguments if call.arguments is not None else {"_unparsed": call.raw_arguments},
        result=_result(call.result), latency_ms=None)) for call in step.tool_calls]
    if step.content or not out:
        out.append(AgentStep(output=step.content or ""))
    return out


def _agents(conversation: Conversation) -> tuple[list[AgentDefinition], list[str]]:
    called: dict[str, list[str]] = {}
    for turn, agents in zip(conversation.trajectory.turns, conversation.step_agents, strict=True):
        for step, agent in zip(turn.steps, agents, strict=True):
            called.setdefault(agent, []).extend(c.name for c in step.tool_calls if c.name)
    definitions, unrecorded = [], []
    for name in dict.fromkeys([*conversation.agents, *called]):
        info = conversation.agents.get(name)
        role = f"agent {name!r} as traced" + (f" (handed work by {info.parent})" if info and info.parent else "")
        if info is not None and info.tools is not None:
            tools = [ToolDefinition(name=t["name"], description=t.get("description"),
                                    parameters_schema=t.get("parameters") or {}) for t in info.tools]
        else:
            unrecorded.append(name)
            tools = [ToolDefinition(name=n, parameters_schema={}) for n in dict.fromkeys(called.get(name, []))]
        definitions.append(AgentDefinition(agent_id=name, role=role, tools_available=tools))
    return definitions, unrecorded


def _turn(conversation: Conversation, index: int) -> SessionTurn:
    turn = conversation.trajectory.turns[index]
    interactions: list[AgentInteraction] = []
    for step, agent in zip(turn.steps, conversation.step_agents[index], strict=True):
        if interactions and interactions[-1].agent_id == agent:
            interactions[-1].agent_steps.extend(_agent_steps(step))
            interactions[-1].latency_ms = (interactions[-1].latency_ms or 0) + step.latency_s * 1000
            continue
        if interactions:
            info = conversation.agents.get(agent)
            before = interactions[-1]
            info, back = conversation.agents.get(agent), conversation.agents.get(before.agent_id)
            if info is not None and info.parent == before.agent_id:
                before.handoff_to = agent  # the other agent took over: a handoff, with what it was handed
                last = before.agent_steps[-1].tool_call
                before.handoff_context = conversation.handoff_contexts.get(
                    (agent, index), last.parameters if last is not None else None)
            elif back is not None and back.parent == agent:
                before.handoff_to = agent  # the nested agent handed back, with its answer
                before.handoff_context = next((s.output for s in reversed(before.agent_steps) if s.output), None)
        interactions.append(AgentInteraction(agent_id=agent, latency_ms=step.latency_s * 1000,
                                             agent_steps=_agent_steps(step)))
    # a conversation cut off mid-call gave the user no answer in its last turn, whatever an earlier step said
    cut = conversation.trajectory.stop_reason == "cut_off" and index == len(conversation.trajectory.turns) - 1
    return SessionTurn(user_message=turn.user or "", agent_interactions=interactions,
                       final_response="" if cut else turn.answer)


def to_session(conversation: Conversation) -> AgentSession:
    """The conversation as an AgentSession (its texts were masked and capped when the trace was read)."""
    agents, unrecorded = _agents(conversation)
    first_user = next((t.user for t in conversation.trajectory.turns if t.user), None)
    notes = list(conversation.notes)
    if unrecorded:
        notes.append(f"the tools offered to {', '.join(unrecorded)} were not recorded: the tools called are listed "
                     "as offered, unchecked (no unauthorized-tool detection for them)")
    return AgentSession(
        id=conversation.id, task=first_user or "(no user message recorded)", agents=agents,
        turns=[_turn(conversation, i) for i in range(len(conversation.trajectory.turns))],
        total_latency_ms=conversation.latency_s * 1000,
        metadata={"source": "opentelemetry trace", "where": conversation.where, "model": conversation.model,
                  "conventions": conversation.conventions, "notes": notes,
                  "started": conversation.started})
