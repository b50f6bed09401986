"""Graders that read the tool calls of a trajectory: order, forbidden tools."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from evals_cli.graders.base import GradeContext, Grader, register_grader
from evals_cli.models.grader_specs.trajectory import ToolOrderSpec, ToolsAvoidedSpec
from evals_cli.models.results import Grade


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern)


@register_grader
class ToolOrderGrader(Grader):
    """Expected tools appear in order (extra calls allowed in `subsequence` mode)."""

    kind = "tool_order"
    spec: ToolOrderSpec

    def __init__(self, name: str, spec: ToolOrderSpec, base_dir: Path) -> None:
        super().__init__(name, spec)

    async def grade(self, ctx: GradeContext) -> Grade:
        expected = self.spec.expected if self.spec.expected is not None else ctx.sample.expected_tool_order
        called = [c.name for c in ctx.trajectory.tool_calls]
        if not expected:
            return Grade(score=1.0, rationale="no expected tool order: nothing to check",
                         metadata={"called": called})
        matched = 0
        for name in called:
            if matched < len(expected) and _matches(name, expected[matched]):
                matched += 1
        complete = matched == len(expected)
        score = (1.0 if complete else 0.0) if self.spec.score == "binary" else matched / len(expected)
        if complete:
            why = f"called {' → '.join(expected)} in order"
        else:
            why = (f"expected {' → '.join(expected)}; matched {matched}/{len(expected)}, "
                   f"missing {expected[matched]!r} after {called[:] or 'no calls'}")
        return Grade(score=score, rationale=why,
                     metadata={"called": called, "expected": expected, "matched": matched})


@register_grader
class ToolsAvoidedGrader(Grader):
    """None of the forbidden tools (sample's plus spec's, globs allowed) was called."""

    kind = "tools_avoided"
    spec: ToolsAvoidedSpec

    def __init__(self, name: str, spec: ToolsAvoidedSpec, base_dir: Path) -> None:
        super().__init__(name, spec)

    async def grade(self, ctx: GradeContext) -> Grade:
        forbidden = list(dict.fromkeys([*(ctx.sample.forbidden_tools or []), *self.spec.tools]))
        if not forbidden:
            return Grade(score=1.0, rationale="no forbidden tools: nothing was broken")
        hits = [c.name for c in ctx.trajectory.tool_calls if any(_matches(c.name, f) for f in forbidden)]
        if hits:
            counts = {n: hits.count(n) for n in dict.fromkeys(hits)}
            listed = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in counts.items())
            return Grade(score=0.0, rationale=f"called forbidden tool(s): {listed}", metadata={"violations": hits})
        return Grade(score=1.0, rationale=f"avoided {', '.join(forbidden)}")
