"""`kind: tool_args`: the expected calls were made with the right arguments (order is tool_order's job)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from evals_cli.graders.arg_match import compare, matchers_for
from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.calls import glob_match, max_matching
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ArgMatch, ExpectedCall, ScoreMode
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import ToolCall


class ToolArgsSpec(GraderBase):
    """Expected calls with their arguments; score = expected calls matched / expected calls."""

    kind: Literal["tool_args"] = "tool_args"
    calls: list[ExpectedCall] | None = Field(
        default=None, description="Expected calls; default the sample's expected_calls (same shape)."
    )
    defaults: dict[str, dict[str, ArgMatch]] = Field(
        default_factory=dict,
        description="Tool name (glob) -> argument -> matcher, applied to every expected call of that tool; "
        "a call's own `match` overrides it.",
    )
    allow_extra_args: bool = Field(default=True, description="Arguments the expectation does not name are allowed.")
    score: ScoreMode = Field(default="fraction", description="fraction: matched/expected; binary: all or nothing.")


_CALLS = TypeAdapter(list[ExpectedCall])


def expected_label(call: ExpectedCall) -> str:
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.args.items())
    return f"{call.tool}({inner})"


def sample_calls(sample: Sample) -> list[ExpectedCall]:
    """The sample's own expectation, `expected_calls` (or its deprecated place, `metadata.expected_calls`),
    checked with the spec's own model."""
    raw = sample.row_field("expected_calls")
    if raw is None:
        return []
    field = "expected_calls" if sample.expected_calls is not None else "metadata.expected_calls"
    try:
        return _CALLS.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"sample {field}{'.' + where if where else ''}: {first['msg']}") from None


class _Case:
    """One expected call with its merged matchers, able to say whether (and why not) a call fits it."""

    def __init__(self, call: ExpectedCall, defaults: dict[str, dict[str, ArgMatch]], allow_extra: bool) -> None:
        self.call = call
        self.matchers = matchers_for(call, defaults)
        self.allow_extra = allow_extra

    def problems(self, actual: ToolCall) -> list[Any]:
        return compare(self.call, self.matchers, actual.arguments or {}, self.allow_extra)

    def fits(self, actual: ToolCall) -> bool:
        return glob_match(actual.name, self.call.tool) and actual.arguments is not None and not self.problems(actual)

    def explain(self, calls: list[ToolCall], used: set[int]) -> str:
        """Why no call fits: the nearest call of this tool (fewest argument problems, unused first)."""
        name = expected_label(self.call)
        candidates = [i for i, c in enumerate(calls) if glob_match(c.name, self.call.tool)]
        if not candidates:
            return f"{name}: {self.call.tool} was never called"
        parsed = [i for i in candidates if calls[i].arguments is not None]
        if not parsed:
            bad = calls[candidates[0]]
            why = bad.arguments_error or repr(bad.raw_arguments)
            return f"{name}: calls[{candidates[0]}] had unparseable arguments ({why})"
        nearest = min(parsed, key=lambda i: (i in used, len(self.problems(calls[i])), i))
        problems = self.problems(calls[nearest])
        if not problems:
            return f"{name}: its only fitting call(s) already match other expected calls"
        return f"{name}: nearest calls[{nearest}]: {problems[0]}"


@GRADERS.register("tool_args", spec=ToolArgsSpec)
class ToolArgsGrader(Grader[ToolArgsSpec]):
    """Each expected call is matched to a distinct actual call; score = matched / expected (or binary)."""
    reads_steps = True

    def check_sample(self, sample: Sample) -> list[str]:
        """A malformed expected_calls shows before any model call, not as a grading error later."""
        if self.spec.calls is not None:
            return []
        try:
            sample_calls(sample)
        except ValueError as exc:
            why = str(exc).removeprefix("sample ")
            return [f"sample {sample.id!r}: {why}, needed by grader {self.name} (tool_args)"]
        return []

    async def grade(self, ctx: GradeContext) -> Grade:
        try:
            expected = self.spec.calls if self.spec.calls is not None else sample_calls(ctx.sample)
        except ValueError as exc:
            return Grade.failed(str(exc))
        if not expected:
            return Grade.not_applicable("no expected calls: nothing to check")
        cases = [_Case(e, self.spec.defaults, self.spec.allow_extra_args) for e in expected]
        calls = ctx.trajectory.tool_calls
        matching = max_matching(cases, calls, lambda case, call: case.fits(call))
        used = set(matching.values())
        problems = {k: case.explain(calls, used) for k, case in enumerate(cases) if k not in matching}
        n, hit = len(cases), len(matching)
        score = hit / n if self.spec.score == "fraction" else float(hit == n)
        metadata = {"calls": [{"expected": expected_label(e), "call_index": matching.get(k), "problem": problems.get(k)}
                              for k, e in enumerate(expected)]}
        if not problems:
            pairs = ", ".join(f"{expected_label(expected[k])} = calls[{j}]" for k, j in sorted(matching.items()))
            return Grade(score=score, rationale=f"all {n} expected call(s) matched: {pairs}", metadata=metadata)
        first = problems[min(problems)]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Grade(score=score, rationale=f"{hit}/{n} expected calls matched; {first}{more}", metadata=metadata)
