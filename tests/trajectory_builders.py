"""Build trajectories and grade them in one line, for the tool-call grader tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from evals_cli.graders.base import GradeContext, Grader
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, StopReason, ToolCall, Trajectory, Turn

Group = ToolCall | str | list[ToolCall | str]


def c(name: str, args: dict[str, Any] | None = None, *, raw: str | None = None, result: str = "ok",
      unknown: bool = False) -> ToolCall:
    """A tool call; `raw` gives unparseable argument text (arguments None, as the mock records it)."""
    if raw is not None:
        return ToolCall(name=name, arguments=None, raw_arguments=raw, arguments_error="JSONDecodeError: bad",
                        result="Error: the arguments are not valid JSON", is_error=True, unknown_tool=unknown)
    arguments = args or {}
    return ToolCall(name=name, arguments=arguments, raw_arguments=json.dumps(arguments), result=result,
                    unknown_tool=unknown, is_error=unknown)


def _call(item: ToolCall | str) -> ToolCall:
    return c(item) if isinstance(item, str) else item


def turn(*groups: Group, answer: str | None = "done", user: str = "go") -> Turn:
    """One user turn: each group is one model step (a list = parallel calls), then the final answer."""
    steps = [Step(tool_calls=[_call(x) for x in (g if isinstance(g, list) else [g])]) for g in groups]
    if answer is not None:
        steps.append(Step(content=answer))
    return Turn(user=user, steps=steps)


def traj(*groups: Group, answer: str | None = "done", stop: StopReason = "completed") -> Trajectory:
    """A one-turn trajectory; each argument is one model step."""
    return Trajectory(turns=[turn(*groups, answer=answer)], stop_reason=stop)


def run(grader: Grader, trajectory: Trajectory, sample: Sample | None = None,
        tools: dict[str, ToolSpec] | None = None) -> Grade:
    sample = sample or Sample(input="q")
    ctx = GradeContext(sample, trajectory, trajectory, None, sample.ground_truth_for(None), tools or {})
    return asyncio.run(grader.grade(ctx))
