"""Every call against the tools the agent was offered (ToolSpec.json_schema()): the violations the
`tool_schema` grader scores and the sessions' tool validation reports.

Severity says how bad a violation is for an agent with real tools: calling a tool it was never given (HIGH)
is a security problem; a wrong or invented argument (MEDIUM) is a correctness one.
"""

from __future__ import annotations

from typing import Any

from evals_cli.json_values import SchemaUnusable, check_value
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
    try:
        found = check_value(call.arguments, tools[call.name].json_schema())
    except SchemaUnusable as exc:  # the tool's schema, not the call: the grade is an error, never a zero
        raise SchemaUnusable(f"tool {call.name!r}: {exc}") from None
    return [one(kind, detail) for kind, detail in found]
