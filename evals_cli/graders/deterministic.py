"""Graders that need no model: text functions, tool order, forbidden tools."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from evals_cli.graders.base import GradeContext, Grader, register_grader
from evals_cli.graders.functions import load_function, to_grade
from evals_cli.models.results import Grade
from evals_cli.models.specs import ToolGraderSpec, ToolOrderSpec, ToolsAvoidedSpec


@register_grader
class ToolGrader(Grader):
    """A function of the submission and the ground truth (built-in or `path.py:func`)."""

    kind = "tool"
    per_turn = True
    spec: ToolGraderSpec

    def __init__(self, name: str, spec: ToolGraderSpec, base_dir: Path) -> None:
        super().__init__(name, spec)
        self.fn = load_function(spec.function, base_dir)
        self.kwargs = {} if spec.case_sensitive is None else {"case_sensitive": spec.case_sensitive}

    async def grade(self, ctx: GradeContext) -> Grade:
        submission = ctx.submission(self.spec.extractor, self.spec.extractor_config)
        sample = ctx.sample.model_copy(update={"ground_truth": ctx.ground_truth})
        args = [sample, submission]
        if getattr(self.fn, "__evals_wants_trajectory__", False):
            args.append(ctx.view)
        grade = to_grade(self.fn(*args, **self.kwargs), f"grader function {self.spec.function}")
        if grade.submission is None:
            grade.submission = submission
        return grade


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
