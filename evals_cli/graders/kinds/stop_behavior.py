"""`kind: stop_behavior`: did the agent stop at the right time? Three checks, each with its own score:

- premature_stop: it stopped by itself before the required tools were called;
- no_stop: it kept calling tools (or called a mutating tool) after the required calls were complete;
- max_steps: the loop cut it off at the step limit (stop_reason max_steps) or at the sample's token or message
  limit (token_limit, message_limit), or a traced conversation ends mid-call (stop_reason cut_off).

"Complete" is the first model step after which every required tool (globs, as a multiset, any order) has been
called by a call that reached a tool; unknown tools and unparseable arguments do not count, so a retry of a
malformed call is not "after completion". Order is tool_order's job.

With a stateful environment, no_stop also reads state: the expected state (the grader's `expected_state`, else
the row's) is first reached after some call (or before any, when the declared world already meets it); a call of
a mutating effect (files.write|append|delete, records.create|update|delete) after that is not stopping, whatever
the required tools say. The world is replayed call by call from the recorded effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evals_cli.environment.world import World
from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.calls import any_glob, glob_match, label, max_matching, reached_tool, step_groups
from evals_cli.graders.expectations import state_reached
from evals_cli.models.effects import EFFECTS
from evals_cli.models.expected_state import ExpectedState
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade
from evals_cli.models.trajectory import LIMIT_OPTIONS, LIMIT_STOPS, ToolCall

StopCheck = Literal["premature_stop", "no_stop", "max_steps"]
STOP_CHECKS: tuple[StopCheck, ...] = ("premature_stop", "no_stop", "max_steps")


class StopBehaviorSpec(GraderBase):
    """Did the agent stop at the right time? One score per check in metadata.checks."""

    kind: Literal["stop_behavior"] = "stop_behavior"
    checks: list[StopCheck] = Field(default_factory=lambda: list(STOP_CHECKS), min_length=1,
                                    description="premature_stop, no_stop, max_steps.")
    required_tools: list[str] | None = Field(
        default=None, description="Required tools (globs); default expected_tool_order. Also accepted as "
        "`required: [..]` (a list), as before `required: true|false` became every grader's option.")
    mutating: list[str] = Field(default_factory=list, description="Tools (globs) that must never run after the "
                                                                  "required calls are complete.")
    max_extra_calls: int = Field(default=0, ge=0, description="Tool calls allowed after the required calls are complete.")
    combine: Literal["min", "mean"] = Field(default="min", description="How the checks' scores make the grade.")
    expected_state: ExpectedState | None = Field(
        default=None, description="For no_stop in a stateful environment: the state after which no mutating effect "
        "may run; default the row's expected_state.")

    @model_validator(mode="before")
    @classmethod
    def _required_list(cls, data: Any) -> Any:
        """`required: [globs]` (a list) keeps its old meaning, the required tools; a bool is the gate option."""
        if isinstance(data, dict) and isinstance(data.get("required"), list):
            data = dict(data)
            if "required_tools" in data:
                raise ValueError("give required_tools, not both required: [..] and required_tools")
            data["required_tools"] = data.pop("required")
        return data

    @field_validator("checks")
    @classmethod
    def _unique(cls, checks: list[StopCheck]) -> list[StopCheck]:
        return list(dict.fromkeys(checks))


@dataclass(frozen=True)
class Check:
    score: float
    rationale: str
    applicable: bool = True  # False: this check had nothing to look at (the grade is n/a when none had)


def _fits(pattern: str, name: str) -> bool:
    return glob_match(name, pattern)


def completion(required: list[str], calls: list[ToolCall], groups: list[list[int]]) -> tuple[int | None, list[str]]:
    """(index into `groups` of the step that completed the required calls, or -1 when nothing is required,
    or None when they never completed; the required tools still missing at the end)."""
    if not required:
        return -1, []
    seen: list[str] = []
    matched: dict[int, int] = {}
    for step, group in enumerate(groups):
        seen += [calls[i].name for i in group if reached_tool(calls[i])]
        matched = max_matching(required, seen, _fits)
        if len(matched) == len(required):
            return step, []
    return None, [r for k, r in enumerate(required) if k not in matched]


def _listed(calls: list[ToolCall], limit: int = 4) -> str:
    shown = ", ".join(label(c, 60) for c in calls[:limit])
    return shown + (f" and {len(calls) - limit} more" if len(calls) > limit else "")


class _Checks:
    """The three checks over one trajectory; each returns a Check."""

    def __init__(self, spec: StopBehaviorSpec, ctx: GradeContext, required: list[str] | None) -> None:
        self.spec = spec
        self.stop_reason = ctx.trajectory.stop_reason
        self.calls = ctx.trajectory.tool_calls
        self.groups = step_groups(ctx.trajectory)
        self.required = required
        self.done, self.missing = completion(required or [], self.calls, self.groups)
        expected = spec.expected_state if spec.expected_state is not None else ctx.sample.expected_state
        stateful = ctx.trajectory.state_changes is not None or ctx.sample.environment is not None
        self.expected = expected if stateful else None
        self.initial = World(ctx.sample.environment).apply(ctx.trajectory.starting_changes())  # after setup

    def reached_at(self) -> int | None:
        """Index of the call after which the expected state first held (-1: before any call; None: never)."""
        assert self.expected is not None
        world = self.initial.copy()
        if state_reached(self.expected, self.initial, world):
            return -1
        for i, call in enumerate(self.calls):
            if world.replay(call) and state_reached(self.expected, self.initial, world):
                return i
        return None

    def state_stop(self) -> Check:
        """no_stop by state: no mutating effect after the expected state was first reached."""
        reached = self.reached_at()
        if reached is None:
            return Check(1.0, "the expected state was never reached: nothing to stop after", applicable=False)
        after = [c for c in self.calls[reached + 1:] if c.effect is not None and EFFECTS[c.effect.op].impl.mutating]
        when = "in the declared world" if reached < 0 else f"after calls[{reached}] {label(self.calls[reached], 60)}"
        if after:
            return Check(0.0, f"mutating effect(s) after the expected state was reached ({when}): {_listed(after)}")
        return Check(1.0, f"no mutating effect after the expected state was reached ({when})")

    def premature_stop(self) -> Check:
        if self.required is None:
            return Check(1.0, "no required tools: nothing to check", applicable=False)
        # a bound, a recording cut off or an error; empty_answer and unparsed_tool_call: it stopped itself
        if self.stop_reason in LIMIT_STOPS or self.stop_reason in ("cut_off", "error"):
            return Check(1.0, f"not applicable: the agent did not stop by itself ({self.stop_reason}; see max_steps)",
                         applicable=False)
        if self.done is not None:
            if not self.required:
                return Check(1.0, "nothing was required; it stopped by itself", applicable=False)
            return Check(1.0, f"stopped after the required calls ({', '.join(self.required)})")
        return Check(0.0, f"stopped before calling required tool(s) {', '.join(repr(m) for m in self.missing)}")

    def no_stop(self) -> Check:
        by_calls = self.calls_stop()
        if self.expected is None:
            return by_calls
        by_state = self.state_stop()
        if not by_calls.applicable:
            return by_state
        if not by_state.applicable:
            return by_calls
        score = min(by_calls.score, by_state.score)
        return Check(score, f"{by_calls.rationale}; {by_state.rationale}")

    def calls_stop(self) -> Check:
        if self.required is None:
            return Check(1.0, "no required tools: nothing to check", applicable=False)
        if self.done is None:
            return Check(1.0, "the required calls never completed: nothing to stop after", applicable=False)
        after = [self.calls[i] for group in self.groups[self.done + 1:] for i in group]
        mutating = [c for c in after if any_glob(c.name, self.spec.mutating)]
        since = "after the required calls were complete" if self.required else "though none were needed"
        limit = self.spec.max_extra_calls
        if len(after) > limit:
            why = f"{len(after)} tool call(s) {since} (max {limit}): {_listed(after)}"
            if mutating:
                why += f"; mutating: {', '.join(dict.fromkeys(c.name for c in mutating))}"
            return Check(0.0, why)
        if mutating:
            return Check(0.0, f"mutating call(s) {since}: {_listed(mutating)}")
        if not after:
            return Check(1.0, f"no tool calls {since}" if self.required else "no tool calls, and none were needed")
        return Check(1.0, f"{len(after)} tool call(s) {since}, within the {limit} allowed")

    def max_steps(self) -> Check:
        if self.stop_reason == "max_steps":
            return Check(0.0, "cut off at the step limit (stop_reason max_steps): no final answer of its own")
        if self.stop_reason in LIMIT_STOPS:  # the sample's token or message limit: a bound, as max_steps is
            return Check(0.0, f"cut off at the sample's limit {LIMIT_OPTIONS[self.stop_reason]} (stop_reason "
                              f"{self.stop_reason}): no final answer of its own")
        if self.stop_reason == "cut_off":  # a recording that ends mid-call: stopped from outside, as at a bound
            return Check(0.0, "the recorded conversation was cut off mid-call (stop_reason cut_off): no final "
                              "answer of its own")
        return Check(1.0, f"stopped by itself (stop_reason {self.stop_reason})")


@GRADERS.register("stop_behavior", spec=StopBehaviorSpec)
class StopBehaviorGrader(Grader[StopBehaviorSpec]):
    """The selected checks, each in metadata.checks; the grade is their min (or mean) over the checks that
    applied."""

    async def grade(self, ctx: GradeContext) -> Grade:
        required = self.spec.required_tools if self.spec.required_tools is not None else ctx.sample.expected_tool_order
        checks = _Checks(self.spec, ctx, required)
        results = {name: getattr(checks, name)() for name in self.spec.checks}
        # checks with nothing to look at drop out, as n/a grades do from every average: a mean over (0, n/a)
        # is 0, not 0.5
        scores = [c.score for c in results.values() if c.applicable] or [1.0]
        score = min(scores) if self.spec.combine == "min" else sum(scores) / len(scores)
        failed = [name for name, c in results.items() if c.score < 1.0]
        metadata = {"checks": {n: {"score": c.score, "rationale": c.rationale, "applicable": c.applicable}
                               for n, c in results.items()}, "failed": failed}
        if failed:
            why = f"failed {', '.join(failed)} — " + "; ".join(f"{n}: {results[n].rationale}" for n in failed)
        else:
            why = "passed " + "; ".join(f"{n}: {c.rationale}" for n, c in results.items())
        return Grade(score=score, rationale=why, metadata=metadata,
                     applicable=any(c.applicable for c in results.values()))
