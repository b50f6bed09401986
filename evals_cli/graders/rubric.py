"""Jinja2 rubrics, rendered in a sandbox with strict undefined variables."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory

RESERVED = ("input", "ground_truth", "submission", "trajectory", "tool_calls", "tool_results")


class RubricError(ValueError):
    """A rubric that cannot be parsed or rendered for a sample."""


_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


@lru_cache(maxsize=64)
def compile_rubric(text: str) -> Any:
    try:
        return _ENV.from_string(text)
    except TemplateSyntaxError as exc:
        raise RubricError(f"line {exc.lineno}: Jinja2 syntax error: {exc.message}") from None


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
                lines.append(f"[tool result] {call.result}")
            if step.content:
                lines.append(f"[assistant] {step.content}")
    if trajectory.stop_reason != "completed":
        lines.append(f"[stopped: {trajectory.stop_reason}]")
    return "\n".join(lines)


def rubric_variables(sample: Sample, trajectory: Trajectory, submission: str, ground_truth: Any,
                     turn: int | None) -> dict[str, Any]:
    """The variables a rubric may use: the sample's rubric_vars plus the reserved ones (which win)."""
    calls = trajectory.tool_calls
    user = sample.user_turns[turn] if turn is not None and sample.user_turns else sample.input_text()
    return {
        **sample.rubric_vars,
        "input": user,
        "ground_truth": ground_truth if ground_truth is not None else "",
        "submission": submission,
        "trajectory": transcript(trajectory),
        "tool_calls": [{"name": c.name, "arguments": c.arguments, "result": c.result} for c in calls],
        "tool_results": [c.result for c in calls],
    }


def render_rubric(text: str, variables: dict[str, Any]) -> str:
    template = compile_rubric(text)
    try:
        return template.render(**variables)
    except UndefinedError as exc:
        available = ", ".join(sorted(variables))
        raise RubricError(f"{exc.message}; available variables: {available} (add it to the sample's rubric_vars)") \
            from None
    except SecurityError as exc:
        raise RubricError(f"rubric tried an unsafe operation: {exc}") from None
    except Exception as exc:  # a template error at render time (a filter on the wrong type, ...)
        raise RubricError(f"rendering failed: {type(exc).__name__}: {exc}") from None
