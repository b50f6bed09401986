"""The variables a judge's rubric is rendered with, read off a sample and what the agent did: the row's own
rubric_vars, the reserved ones (which win over them) and the row's task. The template engine (rubric.py) knows
nothing of samples."""

from __future__ import annotations

import json
from typing import Any

from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory

RESERVED = ("input", "ground_truth", "submission", "trajectory", "conversation", "tool_calls", "tool_results")


def transcript(trajectory: Trajectory) -> str:
    """A plain-text transcript a judge can read."""
    lines: list[str] = []
    for message in trajectory.prefilled:
        if message.get("role") != "system":
            lines.append(f"[{message.get('role')}] {message.get('content') or ''}")
    for turn in trajectory.turns:
        if turn.user is not None:
            lines.append(f"[user] {turn.user}")
        for step in turn.steps:
            for call in step.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False) if call.arguments is not None \
                    else call.raw_arguments
                lines.append(f"[tool call] {call.name}({args})")
                # an attack the suite planted in the result: the judge must know whose words those are
                marker = "[tool result, carrying an injected attack]" if call.injected else "[tool result]"
                lines.append(f"{marker} {call.result}")
            if step.content:
                lines.append(f"[assistant] {step.content}")
    if trajectory.stop_reason != "completed":
        lines.append(f"[stopped: {trajectory.stop_reason}]")
    return "\n".join(lines)


# the names a row may give its task under (rubric_vars first, then metadata): the tutorial format writes
# `original_task`, letta-style rows `task`, simulated-user rows `goal`
TASK_KEYS = ("task", "original_task", "originalTask", "goal", "user_goal")


def sample_task(sample: Sample, user: str) -> str:
    """The task the row states, in whichever form it gives it (a simulated user's `goal` included); else the
    user's message. Built-in rubrics read `task`: a judge that never sees the task grades the agent against the
    wrong question."""
    for source in (sample.rubric_vars, sample.metadata):
        for key in TASK_KEYS:
            value = source.get(key)
            if value not in (None, "", [], {}):
                return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if sample.user is not None and sample.user.goal:
        return sample.user.goal
    return user


def conversation(trajectory: Trajectory) -> str:
    """The transcript with each turn numbered from 1 (`--- turn N ---` before the user message that opens it):
    what a judge needs to say at which turn something happened. Tool calls and results stay in place."""
    lines = [f"[{m.get('role')}] {m.get('content') or ''}" for m in trajectory.prefilled if m.get("role") != "system"]
    for number, turn in enumerate(trajectory.turns, start=1):
        lines.append(f"--- turn {number} ---")
        lines.extend(transcript(Trajectory(turns=[turn])).splitlines())
    if trajectory.stop_reason != "completed":
        lines.append(f"[stopped: {trajectory.stop_reason}]")
    return "\n".join(lines)


def _turn_message(sample: Sample, trajectory: Trajectory, turn: int | None) -> str:
    """The user message of `turn` (the scripted one, else the one the trajectory recorded: a simulated or
    replayed user's); the whole input when no turn is graded on its own."""
    if turn is None:
        return sample.input_text()
    scripted = sample.user_turns
    if scripted and turn < len(scripted):
        return scripted[turn]
    if turn < len(trajectory.turns) and trajectory.turns[turn].user is not None:
        return trajectory.turns[turn].user or ""
    return sample.input_text()


def rubric_variables(sample: Sample, trajectory: Trajectory, submission: str, ground_truth: Any,
                     turn: int | None) -> dict[str, Any]:
    """The variables a rubric may use: the sample's rubric_vars plus the reserved ones (which win), and `task`
    (the row's own task in any of its forms, see TASK_KEYS; the user's message when it gives none)."""
    calls = trajectory.tool_calls
    user = _turn_message(sample, trajectory, turn)
    task = sample_task(sample, user)
    simulated = sample.user
    return {
        # a simulated user's goal and the row's success criterion (builtin:goal_completion reads them); a row
        # without them may give its own under these names
        "goal": simulated.goal if simulated is not None and simulated.goal else task,
        "success": sample.success or "",
        **sample.rubric_vars,
        "task": task,
        "conversation": conversation(trajectory),
        "input": user,
        "ground_truth": ground_truth if ground_truth is not None else "",
        "submission": submission,
        "trajectory": transcript(trajectory),
        "tool_calls": [{"name": c.name, "arguments": c.arguments, "result": c.result} for c in calls],
        "tool_results": [c.result for c in calls],
    }
