"""`kind: tool_schema`: every call against the tools the agent was offered (ctx.tools, ToolSpec.json_schema()).

Severity says how bad a violation is for an agent with real tools: calling a tool it was never given (HIGH)
is a security problem; a wrong or invented argument (MEDIUM) is a correctness one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals_cli.graders.base import GradeContext, Grader, register_grader
from evals_cli.graders.schema_check import check_value
from evals_cli.models.grader_specs.trajectory import ToolSchemaSpec
from evals_cli.models.results import Grade
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import ToolCall

SEVERITY = {"unauthorized_tool": "HIGH"}  # everything else is MEDIUM


def violations(index: int, call: ToolCall, tools: dict[str, ToolSpec]) -> list[dict[str, Any]]:
    """The violations of one call: [{call_index, tool, kind, severity, detail}]."""

    def one(kind: str, detail: str) -> dict[str, Any]:
        return {"call_index": index, "tool": call.name, "kind": kind, "severity": SEVERITY.get(kind, "MEDIUM"),
                "detail": detail}

    if call.name not in tools:
        offered = ", ".join(tools) or "none"
        return [one("unauthorized_tool", f"{call.name!r} was not offered (offered: {offered})")]
    if call.arguments is None:
        why = call.arguments_error or "not a JSON object"
        return [one("malformed_arguments", f"arguments are not valid JSON ({why}): {call.raw_arguments[:80]!r}")]
    return [one(kind, detail) for kind, detail in check_value(call.arguments, tools[call.name].json_schema(), "")]


@register_grader
class ToolSchemaGrader(Grader):
    """Score 1 - violating calls / calls (a call with several violations counts once); binary: 0 on any."""

    kind = "tool_schema"
    spec: ToolSchemaSpec

    def __init__(self, name: str, spec: ToolSchemaSpec, base_dir: Path) -> None:
        super().__init__(name, spec)

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
