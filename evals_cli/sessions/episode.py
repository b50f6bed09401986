"""A recorded session as an episode of the common pipeline: a `Sample` whose `Trajectory` is the recording.

Nothing is called: the agents and the user replay what was recorded. Each session turn is a `Turn` (the user's
message), each agent step a `Step` carrying the agent that took it (`Step.agent`), its recorded tool call with
the recorded result, and the handoff that ends an interaction (`Step.handoff_to`). The turn's final response is
its last step's text, so `final_answer` and every trajectory grader read what the user was told. The sample
keeps the recording itself (`metadata["recorded_session"]`): the session graders (sessions/graders.py)
need what a trajectory has no place for (the agents' roles and allowed tools, thoughts, handoff contexts). A
sample may also carry an analysis made elsewhere (`metadata["session_analysis"]`), which the session scores
grade as it is; in a run the analysis is the run's analyser's (sessions/analyser.py). The `recorded_session`
target (sessions/target.py) reads a session file into these samples and replays each recording.
"""

from __future__ import annotations

import json
from typing import Any

from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn
from evals_cli.sessions.models import AgentInteraction, AgentSession, SessionTurn
from evals_cli.sessions.results import ANALYSIS, SessionAnalysis

RECORDING = "recorded_session"
"""The key of `Sample.metadata` that holds the recording (the session, as JSON)."""


def _result_text(result: Any) -> str:
    """A tool result as the agent saw it: text stays text, anything else is its JSON."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, sort_keys=True)


def _steps(turn_index: int, index: int, interaction: AgentInteraction) -> list[Step]:
    agent = interaction.agent_id
    steps: list[Step] = []
    for s, recorded in enumerate(interaction.agent_steps):
        calls = []
        latency = 0.0
        if recorded.tool_call is not None:
            call = recorded.tool_call
            calls.append(ToolCall(id=f"{turn_index}.{index}.{s}", name=call.tool_name, arguments=call.parameters,
                                  raw_arguments=json.dumps(call.parameters, ensure_ascii=False),
                                  result=_result_text(call.result)))
            latency = (call.latency_ms or 0.0) / 1000
        steps.append(Step(content=recorded.output, tool_calls=calls, latency_s=latency, agent=agent,
                          finish_reason="tool_calls" if calls else "stop"))
    if not steps:  # an interaction that only hands off: it still happened, and says to whom
        steps.append(Step(agent=agent, finish_reason="stop"))
    steps[-1].handoff_to = interaction.handoff_to
    return steps


def _turn(turn_index: int, turn: SessionTurn) -> Turn:
    steps = [step for i, interaction in enumerate(turn.agent_interactions)
             for step in _steps(turn_index, i, interaction)]
    last = steps[-1] if steps else None
    if last is None or last.content != turn.final_response or last.handoff_to is not None:
        # the answer the user got is the turn's last word, from the agent that acted last
        steps.append(Step(content=turn.final_response, agent=last.agent if last else None, finish_reason="stop"))
    return Turn(user=turn.user_message, steps=steps)


def session_trajectory(session: AgentSession) -> Trajectory:
    """The recording replayed as a trajectory (see the module's docstring)."""
    return Trajectory(turns=[_turn(t, turn) for t, turn in enumerate(session.turns)])


def session_sample(session: AgentSession, analysis: SessionAnalysis | None = None) -> Sample:
    """The sample a recorded session is: its id, its user messages as scripted turns, the recording kept, and an
    analysis made of it (when given)."""
    metadata: dict[str, Any] = {"task": session.task, RECORDING: session.model_dump(mode="json")}
    if analysis is not None:
        metadata[ANALYSIS] = analysis.model_dump(mode="json")
    return Sample(id=session.id, input=[turn.user_message for turn in session.turns], metadata=metadata)


def recorded_session(sample: Sample) -> AgentSession | None:
    """The recording a sample carries (None: not a recorded session)."""
    raw = sample.metadata.get(RECORDING)
    return None if raw is None else AgentSession.model_validate(raw)


def session_analysis(sample: Sample) -> SessionAnalysis | None:
    """The analysis of the recording a sample carries (None: no analysis came with it)."""
    raw = sample.metadata.get(ANALYSIS)
    return None if raw is None else SessionAnalysis.model_validate(raw)
