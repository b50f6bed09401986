"""`kind: spans`: assertions over the OpenTelemetry spans a traced episode exported (a `command` or `http` agent
with telemetry, a `kind: traces` conversation): a span named or matching exists or does not, how many, an error
span, a duration bound, an attribute value (graders/span_query.py holds the query form).

The spans say what the turns do not: a retriever or guardrail step, a failed call that no tool result names, how
long one model call took. An episode without spans (a model target, an external agent without telemetry) is
n/a, never a pass. An assertion the kept spans cannot decide (spans or attribute values over the bounds of
models/trajectory.py) leaves the grade without a score, saying so."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.span_query import Outcome, SpanAssertion, check
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ScoreMode
from evals_cli.models.results import Grade
from evals_cli.models.trajectory import MAX_SPANS

NO_SPANS = ("the episode recorded no spans (only a command or http agent with telemetry, or a traces target, "
            "records them): nothing to check")


class SpansSpec(GraderBase):
    """Assertions over the episode's spans; binary (every one holds), or the share that hold."""

    kind: Literal["spans"] = "spans"
    assertions: list[SpanAssertion] = Field(
        alias="assert", min_length=1, description="The assertions, each {the spans it is about: name, "
        "name_contains, name_matches, attributes, has_attributes, error, under; what must hold: count, absent, "
        "min_duration_s, max_duration_s (none: at least one span matches)}.")
    score: ScoreMode = Field(default="binary", description="binary: every assertion holds; fraction: the share "
                             "that hold.")


def _rationale(outcomes: list[Outcome], spans: int) -> str:
    failing = [o for o in outcomes if o.holds is False]
    if not failing:
        return f"all {len(outcomes)} assertion(s) hold over {spans} span(s)"
    held = len(outcomes) - len(failing)
    return f"{held}/{len(outcomes)} assertions hold; " + "; ".join(f"{o.assertion}: {o.said}" for o in failing)


@GRADERS.register("spans", spec=SpansSpec)
class SpansGrader(Grader[SpansSpec]):
    """One outcome per assertion; the rationale names each failing one and what was found."""

    async def grade(self, ctx: GradeContext) -> Grade:
        tree = ctx.trajectory.spans
        if tree is None or (not tree.spans and not tree.left_out):
            return Grade.not_applicable(NO_SPANS)
        outcomes = [check(query, tree) for query in self.spec.assertions]
        total = len(tree.spans) + tree.left_out
        metadata = {"assertions": [{"assertion": o.assertion, "holds": o.holds, "found": o.said} for o in outcomes],
                    "spans": total, "spans_left_out": tree.left_out}
        failing = sum(o.holds is False for o in outcomes)
        unknown = [o for o in outcomes if o.holds is None]
        if unknown and not (self.spec.score == "binary" and failing):
            said = "; ".join(f"{o.assertion}: {o.said}" for o in unknown[:3])
            return Grade.failed(f"{len(unknown)} assertion(s) cannot be decided from the spans kept (at most "
                                f"{MAX_SPANS} per episode, {tree.left_out} left out; attribute values cut past the "
                                f"bound): {said}", **metadata)
        held = len(outcomes) - failing
        score = held / len(outcomes) if self.spec.score == "fraction" else float(failing == 0)
        return Grade(score=score, rationale=_rationale(outcomes, total), metadata=metadata)
