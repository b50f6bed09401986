"""`kind: latency`: the agent answered within a time bound (promptfoo's `latency`, pydantic-evals' `MaxDuration`),
measured from what the trajectory records of each of the agent's steps: when its model call started and how long
the call took.

Three measures, each over the turns graded (the whole conversation; one turn of a per-turn sample; one reply with
`scope: reply`):

- `wall`: each turn from its first model call's start to its last one's end (the model calls, the tools and the
  loop between them), added up over the turns: the time a user waits for the agent. The time between turns is the
  user's (a simulated user's model, a script), not the agent's, and is not counted.
- `model`: the agent's model calls, added up.
- `tool`: the time the agent's tool calls took: from the end of a model call that asked for tools to the start of
  the next model call of its turn, when the answers were in (the loop answers the calls between two model calls).

A time that was not measured is n/a, never a pass: no step to time (for `tool`, no tool call answered before a
next model call), steps without start times (a recording that kept none), an external agent whose steps were not
observed, and model or wall time under `--replay` or `--cache` (a recorded answer is served in no time: those
times are the replay's, not the model's). A python agent's steps time its own work since its previous step, its
tools' time included: for it, `model` is that work and `tool` comes out near zero."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade
from evals_cli.models.trajectory import Turn

Measure = Literal["wall", "model", "tool"]


class LatencySpec(GraderBase):
    """The agent's time (wall, model or tool) at most max_s seconds, per sample, turn or reply; binary."""

    kind: Literal["latency"] = "latency"
    max_s: float = Field(gt=0, description="The bound in seconds: the grade passes when the time measured is at "
                         "most this.")
    measure: Measure = Field(
        default="wall", description="wall: each turn from its first model call's start to its last one's end, "
        "added up (the time between turns is the user's); model: the agent's model calls added up; tool: the time "
        "its tool calls took to answer, between the model call that asked for them and the next one.")


def model_seconds(turns: list[Turn]) -> float:
    """The agent's model calls, added up."""
    return sum(step.latency_s for turn in turns for step in turn.steps)


def tool_seconds(turns: list[Turn]) -> float:
    """From the end of each model call that asked for tools to the start of the next one of its turn."""
    total = 0.0
    for turn in turns:
        for asked, then in zip(turn.steps, turn.steps[1:], strict=False):
            if asked.tool_calls:
                total += max(0.0, then.started - (asked.started + asked.latency_s))
    return total


def wall_seconds(turns: list[Turn]) -> float:
    """Each turn from its first model call's start to its last one's end, added up over the turns."""
    total = 0.0
    for turn in turns:
        if turn.steps:
            first, last = turn.steps[0], turn.steps[-1]
            total += max(0.0, last.started + last.latency_s - first.started)
    return total


MEASURES = {"wall": wall_seconds, "model": model_seconds, "tool": tool_seconds}
_NAMES = {"wall": "wall time", "model": "model time", "tool": "tool time"}


def replayed(pool: Any) -> str | None:
    """Why the model's times are not the model's: the run serves recorded answers (--replay, --cache)."""
    if getattr(pool, "replay", None) is not None:
        return "the run replays recorded answers (--replay)"
    if getattr(pool, "cache", None) is not None:
        return "the run serves recorded answers from its cache (--cache)"
    return None


@GRADERS.register("latency", spec=LatencySpec)
class LatencyGrader(Grader[LatencySpec]):
    """1 when the time measured is at most `max_s`, 0 when it is over (binary); n/a when it was not measured."""

    per_turn = True
    reads_steps = True  # timed from the agent's steps: an external agent's unobserved steps are n/a

    def __init__(self, name: str, spec: LatencySpec, ctx: GraderContext) -> None:
        super().__init__(name, spec, ctx)
        self.replayed = replayed(ctx.pool) if spec.measure != "tool" else None  # tools run live either way

    async def grade(self, ctx: GradeContext) -> Grade:
        spec = self.spec
        what = _NAMES[spec.measure]
        turns = [turn for turn in ctx.view.turns if turn.steps]
        if not turns:
            return Grade.not_applicable(f"no model call to time: {what} not measured")
        if self.replayed is not None:
            return Grade.not_applicable(f"{self.replayed}: its {what} is the replay's, not the model's")
        if spec.measure == "tool" and not any(a.tool_calls for t in turns for a in t.steps[:-1]):
            return Grade.not_applicable("no tool call answered between two model calls: no tool time to measure")
        if spec.measure != "model" and any(step.started <= 0 for turn in turns for step in turn.steps):
            return Grade.not_applicable(f"the agent's steps carry no start times: {what} not measured")
        seconds = MEASURES[spec.measure](turns)
        metadata = {"measure": spec.measure, "seconds": round(seconds, 4), "max_s": spec.max_s,
                    "turns": len(turns)}
        over = seconds > spec.max_s
        said = f"{what} {seconds:.3f}s {'over' if over else 'within'} max_s {spec.max_s:g}s"
        if len(turns) > 1:
            said += f" ({len(turns)} turns)"
        return Grade(score=0.0 if over else 1.0, rationale=said, metadata=metadata)
