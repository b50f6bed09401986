"""`kind: tool_schema`: every call against the tools the agent was offered (ctx.tools); the violations and
their severity are found by `graders.tool_schema`, which the sessions' tool validation shares."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.graders.tool_schema import violations
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ScoreMode
from evals_cli.models.results import Grade

ViolationKind = Literal[
    "unauthorized_tool", "malformed_arguments", "hallucinated_parameter", "missing_required", "type_mismatch",
    "invalid_value",
]


class ToolSchemaSpec(GraderBase):
    """Every call against the tools the agent was offered; score = 1 - violating calls / calls."""

    kind: Literal["tool_schema"] = "tool_schema"
    ignore: list[ViolationKind] = Field(default_factory=list, description="Violation kinds not counted.")
    score: ScoreMode = Field(default="fraction", description="fraction: 1 - violating/calls; binary: 0 on any.")


@GRADERS.register("tool_schema", spec=ToolSchemaSpec)
class ToolSchemaGrader(Grader[ToolSchemaSpec]):
    """Score 1 - violating calls / calls (a call with several violations counts once); binary: 0 on any."""
    reads_steps = True

    async def grade(self, ctx: GradeContext) -> Grade:
        calls = ctx.trajectory.tool_calls
        if not calls:
            return Grade.not_applicable("no tool calls: nothing to check", metadata={"violations": []})
        found = [v for i, call in enumerate(calls) for v in violations(i, call, ctx.tools)
                 if v["kind"] not in self.spec.ignore]
        bad = sorted({v["call_index"] for v in found})
        score = 1.0 - len(bad) / len(calls) if self.spec.score == "fraction" else float(not bad)
        metadata = {"violations": found, "violating_calls": len(bad), "calls": len(calls)}
        if not found:
            return Grade(score=score, rationale=f"all {len(calls)} call(s) fit the offered tool schemas",
                         metadata=metadata)
        shown = "; ".join(f"calls[{v['call_index']}] {v['tool']}: {v['kind']} ({v['severity']}): {v['detail']}"
                          for v in found[:3])
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        return Grade(score=score, metadata=metadata,
                     rationale=f"{len(bad)}/{len(calls)} call(s) violate the offered tool schemas: {shown}{more}")
