"""`kind: no_loops`: the agent did not repeat itself. Mocked tools answer the same call the same way, so an
identical call made again (or an A-B-A-B cycle of calls) can only be a loop, never new information."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import Field

from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.calls import any_glob, canonical_args, label
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ACTOR_DESCRIPTION, CallActor
from evals_cli.models.results import Grade
from evals_cli.models.trajectory import ToolCall


class NoLoopsSpec(GraderBase):
    """No identical call (same tool, same canonical arguments) repeated too often, and no A-B-A-B cycles."""

    kind: Literal["no_loops"] = "no_loops"
    max_repeats: int = Field(default=2, ge=1, description="Times one identical call may be made in total.")
    max_consecutive: int = Field(default=1, ge=1, description="Times one identical call may be made in a row.")
    min_cycle_repeats: int = Field(default=2, ge=2, description="Repetitions in a row that make a block a cycle.")
    max_cycle_length: int = Field(default=3, ge=0, description="Longest block checked for cycles; below 2 turns cycles off.")
    ignore: list[str] = Field(default_factory=list, description="Tools (globs) never counted, e.g. polling tools.")
    actor: CallActor = Field(default="agent", description=ACTOR_DESCRIPTION)


@dataclass(frozen=True)
class Loop:
    kind: str  # repeated | consecutive | cycle
    call: str  # the call (or `a → b` block) that repeats
    count: int
    limit: int
    first_index: int  # index into trajectory.tool_calls where it starts

    def __str__(self) -> str:
        if self.kind == "repeated":
            return f"{self.call} called {self.count} times (max {self.limit})"
        if self.kind == "consecutive":
            return f"{self.call} called {self.count} times in a row (max {self.limit})"
        return f"cycle {self.call} repeated {self.count} times in a row (from calls[{self.first_index}])"


def _key(call: ToolCall) -> str:
    return call.name + "\x00" + canonical_args(call)


def _primitive(block: list[str]) -> bool:
    """Not itself a repetition of a shorter block ([A, B, A, B] is [A, B] twice, found at length 2)."""
    size = len(block)
    return not any(size % p == 0 and block == block[:p] * (size // p) for p in range(1, size))


def find_loops(calls: list[tuple[int, ToolCall]], spec: NoLoopsSpec) -> list[Loop]:
    """Every loop in `calls` (index, call), in the order a reader meets them."""
    keys = [_key(c) for _, c in calls]
    labels: dict[str, str] = {}
    first: dict[str, int] = {}
    for (index, call), key in zip(calls, keys, strict=True):
        labels.setdefault(key, label(call))  # as first made
        first.setdefault(key, index)
    loops = [Loop("repeated", labels[k], n, spec.max_repeats, first[k])
             for k, n in Counter(keys).items() if n > spec.max_repeats]
    run_start = 0
    longest: dict[str, tuple[int, int]] = {}
    for pos in range(1, len(keys) + 1):
        if pos == len(keys) or keys[pos] != keys[run_start]:
            length = pos - run_start
            if length > longest.get(keys[run_start], (0, 0))[0]:
                longest[keys[run_start]] = (length, calls[run_start][0])
            run_start = pos
    loops += [Loop("consecutive", labels[k], n, spec.max_consecutive, at)
              for k, (n, at) in longest.items() if n > spec.max_consecutive]
    for size in range(2, spec.max_cycle_length + 1):
        start = 0
        while start + size * spec.min_cycle_repeats <= len(keys):
            block = keys[start:start + size]
            repeats = 1
            while keys[start + repeats * size: start + (repeats + 1) * size] == block:
                repeats += 1
            if repeats >= spec.min_cycle_repeats and _primitive(block):
                loops.append(Loop("cycle", " → ".join(labels[k] for k in block), repeats,
                                  spec.min_cycle_repeats, calls[start][0]))
                start += repeats * size
            else:
                start += 1
    order = {"repeated": 0, "consecutive": 1, "cycle": 2}
    return sorted(loops, key=lambda loop: (loop.first_index, order[loop.kind]))


@GRADERS.register("no_loops", spec=NoLoopsSpec)
class NoLoopsGrader(Grader[NoLoopsSpec]):
    """1 when no call repeats past the limits and no block of calls cycles; 0 otherwise (binary)."""
    reads_steps = True

    async def grade(self, ctx: GradeContext) -> Grade:
        calls = [(i, c) for i, c in enumerate(ctx.trajectory.calls_by(self.spec.actor))
                 if not any_glob(c.name, self.spec.ignore)]
        if not calls:
            return Grade.not_applicable("no tool calls: nothing to check")
        loops = find_loops(calls, self.spec)
        metadata = {"loops": [asdict(loop) for loop in loops]}
        if loops:
            return Grade(score=0.0, rationale="loop: " + "; ".join(str(loop) for loop in loops), metadata=metadata)
        spec = self.spec
        cycles = f", no cycle repeated {spec.min_cycle_repeats} times" if spec.max_cycle_length >= 2 else ""
        return Grade(score=1.0, metadata=metadata,
                     rationale=f"{len(calls)} call(s): none made more than {spec.max_repeats} times in total or "
                               f"{spec.max_consecutive} in a row{cycles}")
