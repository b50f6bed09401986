"""The OpenAI Agents SDK's own trace export format, read as spans in the conventions conventions.py reads.

The SDK's exporter posts `{"data": [item, ...]}`, each item a trace (`{"object": "trace", "id", "workflow_name",
"group_id", "metadata"}`) or a span (`{"object": "trace.span", "id", "trace_id", "parent_id", "started_at",
"ended_at", "span_data": {...}, "error"}`, times in ISO 8601). A file holds such payloads, or the items
themselves, one per line. Each span's `span_data` (agents/tracing/span_data.py) becomes the attributes the
GenAI semantic conventions give the same thing, so grouping and rebuilding never name the SDK:

- `generation` (a Chat Completions call): `chat` with its input and output messages, model and usage;
- `response` (a Responses API call): a model call whose messages the export does not hold (`response_id` and
  usage only), said as such by the rebuilding;
- `function`: `execute_tool` with its input and output; `agent`: `invoke_agent` with its tools (and the SDK's
  default `transfer_to_<agent>` tool per handoff); `handoff`: the receiving agent's span names the agent that
  handed over (`graph.node.parent_id`, as OpenInference writes it); `guardrail`: its name and whether it
  tripped; `custom` (the SDK's task and turn spans) and the rest: kept, with no LLM meaning.

The trace's `group_id` (the SDK's conversation id) is every span's `gen_ai.conversation.id`, so the runs of one
conversation are one conversation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evals_cli.traces.otlp import BadLine, Span

SDK_OBJECTS = ("trace", "trace.span")
AGENTS_SDK = "openai-agents"  # the convention name a span converted here carries (`evals.convention`)


def is_sdk_export(request: Any) -> bool:
    """Whether one line of a file is the Agents SDK's export: a payload {"data": [...]} or one item."""
    if not isinstance(request, dict):
        return False
    if isinstance(request.get("data"), list):
        return all(isinstance(i, dict) and i.get("object") in SDK_OBJECTS for i in request["data"])
    return request.get("object") in SDK_OBJECTS


def _nanos(value: Any, what: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        raise BadLine(f"{what} {str(value)[:40]!r} is not an ISO 8601 time") from None


def handoff_tool(agent: str) -> str:
    """The tool name the SDK gives a handoff to `agent` by default (Handoff.default_tool_name)."""
    return "transfer_to_" + re.sub(r"[^a-zA-Z0-9]", "_", agent).lower()


def _attributes(data: dict[str, Any]) -> dict[str, Any]:
    kind = data.get("type")
    dump = lambda value: json.dumps(value, ensure_ascii=False)  # noqa: E731
    if kind == "generation":
        usage = data.get("usage") or {}
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": data.get("model"),
                 "gen_ai.usage.input_tokens": usage.get("input_tokens", usage.get("prompt_tokens")),
                 "gen_ai.usage.output_tokens": usage.get("output_tokens", usage.get("completion_tokens"))}
        if data.get("input") is not None:
            attrs["gen_ai.input.messages"] = dump(data["input"])
        if data.get("output") is not None:
            attrs["gen_ai.output.messages"] = dump(data["output"])
        return attrs
    if kind == "response":
        usage = data.get("usage") or {}
        return {"gen_ai.operation.name": "chat", "gen_ai.response.id": data.get("response_id"),
                "gen_ai.usage.input_tokens": usage.get("input_tokens"),
                "gen_ai.usage.output_tokens": usage.get("output_tokens")}
    if kind == "function":
        return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": data.get("name"),
                "gen_ai.tool.call.arguments": data.get("input"), "gen_ai.tool.call.result": data.get("output")}
    if kind == "agent":
        offered = [*(data.get("tools") or []), *(handoff_tool(str(a)) for a in data.get("handoffs") or [])]
        return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": data.get("name"),
                "gen_ai.tool.definitions": dump([{"name": str(t)} for t in offered])}
    if kind == "guardrail":
        return {"guardrail.name": data.get("name"), "guardrail.triggered": bool(data.get("triggered"))}
    return {}


@dataclass
class ExportState:
    """What one line of an export tells the later ones: a trace's conversation id (its group_id), and who handed
    work to an agent (a handoff span, exported before the receiving agent's span ends)."""

    conversations: dict[str, str] = field(default_factory=dict)  # trace id -> group_id
    handed_by: dict[tuple[str, str], str] = field(default_factory=dict)  # (trace id, to agent) -> from agent


def _span(item: dict[str, Any], state: ExportState, where: str) -> Span:
    data = item.get("span_data")
    if not isinstance(data, dict):
        raise BadLine("an Agents SDK span has no span_data object")
    trace_id, span_id = item.get("trace_id"), item.get("id")
    if not isinstance(trace_id, str) or not isinstance(span_id, str):
        raise BadLine("an Agents SDK span has no trace_id or id")
    attrs = {k: v for k, v in _attributes(data).items() if v is not None}
    attrs["evals.convention"] = f"{AGENTS_SDK} {data.get('type')}"
    if trace_id in state.conversations:
        attrs["gen_ai.conversation.id"] = state.conversations[trace_id]
    if data.get("type") == "agent" and (trace_id, str(data.get("name"))) in state.handed_by:
        attrs["graph.node.parent_id"] = state.handed_by[(trace_id, str(data.get("name")))]
    error = item.get("error")
    message = str(error.get("message") or "") if isinstance(error, dict) else (str(error) if error else None)
    return Span(trace_id=trace_id, span_id=span_id, parent_id=item.get("parent_id") or None,
                name=str(data.get("name") or data.get("type") or "span"),
                start_ns=_nanos(item.get("started_at"), "started_at") or 0,
                end_ns=_nanos(item.get("ended_at"), "ended_at"), attributes=attrs, where=where, status_error=message)


def spans_of_export(request: Any, where: str, state: ExportState) -> list[Span]:
    """The spans of one line of the SDK's export (a payload or one item); `state` carries what earlier lines
    said (an exporter writes a trace before its spans, a handoff before the agent it hands to ends)."""
    items = request["data"] if isinstance(request.get("data"), list) else [request]
    for item in items:
        data = item.get("span_data") if isinstance(item.get("span_data"), dict) else {}
        if item.get("object") == "trace" and isinstance(item.get("id"), str) and item.get("group_id"):
            state.conversations[item["id"]] = str(item["group_id"])
        elif data.get("type") == "handoff" and data.get("from_agent") and data.get("to_agent"):
            state.handed_by[(str(item.get("trace_id")), str(data["to_agent"]))] = str(data["from_agent"])
    return [_span(item, state, where) for item in items if item.get("object") == "trace.span"]
