"""What a span's attributes mean, in the conventions instrumentations write: the OpenTelemetry GenAI semantic
conventions (`gen_ai.input.messages` / `gen_ai.output.messages` / `gen_ai.tool.definitions` as JSON, and the
older flattened `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` that instrumentations still emit) and OpenInference
(`llm.input_messages.N.message.*`, `llm.tools.N.tool.json_schema`, `openinference.span.kind`).

Each reading yields the same neutral records (a model call with the messages it was sent and replied, a tool run,
an agent), so grouping and rebuilding (conversations.py) never names a convention. Nothing is guessed: a message
whose content was not captured stays None, and the caller says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from evals_cli.traces.otlp import Span

MODEL_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "gen_ai.session.id")


@dataclass
class CallRecord:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: str  # as the model wrote it (JSON text)


@dataclass
class Message:
    role: str
    content: str | None  # None: not captured (or a message with no text, such as a bare tool call)
    tool_calls: list[CallRecord] = field(default_factory=list)
    tool_call_id: str | None = None
    finish_reason: str | None = None


@dataclass
class ModelCall:
    """One model call span, read."""

    span: Span
    convention: str  # "gen_ai", "gen_ai (prompt.N)", "openinference"
    inputs: list[Message] | None  # None: the request's messages were not recorded
    outputs: list[Message] | None  # None: the reply was not recorded
    tools: list[dict[str, Any]] | None  # {name, description, parameters}; None: not recorded
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


@dataclass
class ToolRun:
    """One tool execution span."""

    span: Span
    id: str | None
    name: str
    arguments: str | None
    result: str | None  # None: not recorded


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _json(value: Any) -> Any:
    """A structured attribute: JSON text (how instrumentations write it) or already an array / kvlist."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened `prefix.N.rest` attributes as a list (by N) of {rest: value}."""
    found: dict[int, dict[str, Any]] = {}
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)\Z")
    for key, value in attrs.items():
        match = pattern.match(key)
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [found[i] for i in sorted(found)]


def span_kind(span: Span) -> str | None:
    """'model', 'tool', 'agent' or None (a span no convention here describes as one of them)."""
    attrs = span.attributes
    op = attrs.get("gen_ai.operation.name")
    oi = str(attrs.get("openinference.span.kind") or "").upper()
    if op in MODEL_OPERATIONS or oi == "LLM":
        return "model"
    if op == "execute_tool" or oi == "TOOL":
        return "tool"
    if op in ("invoke_agent", "create_agent") or oi == "AGENT":
        return "agent"
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.")) for k in attrs):
        return "model"
    return None


def is_genai_like(span: Span) -> bool:
    """Whether a span carries attributes of an LLM convention at all (used to tell 'unknown conventions' from
    ordinary HTTP or database spans, which are no concern of ours)."""
    return any(k.startswith(("gen_ai.", "llm.", "openinference.", "traceloop.", "ai.")) for k in span.attributes)


# --- the GenAI semantic conventions: JSON messages with parts ---

def _genai_parts_message(raw: Any) -> Message | None:
    if not isinstance(raw, dict):
        return None
    role = str(raw.get("role") or "")
    texts: list[str] = []
    calls: list[CallRecord] = []
    call_id: str | None = None
    response: list[str] = []
    parts = raw.get("parts")
    if parts is None and "content" in raw:  # the OpenAI message shape, as some writers use
        return _openai_message(raw)
    for part in parts or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content") or ""))
        elif kind == "tool_call":
            calls.append(CallRecord(str(part.get("id") or ""), str(part.get("name") or ""),
                                    _text(part.get("arguments")) or ""))
        elif kind == "tool_call_response":
            call_id = str(part.get("id") or "") or None
            response.append(_text(part.get("response")) or "")
    content = "".join(texts) if texts else ("".join(response) if response else None)
    return Message(role, content, calls, call_id, raw.get("finish_reason"))


def _openai_message(raw: dict[str, Any]) -> Message:
    content = raw.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    calls = []
    for call in raw.get("tool_calls") or []:
        fn = call.get("function") or {}
        calls.append(CallRecord(str(call.get("id") or ""), str(fn.get("name") or call.get("name") or ""),
                                _text(fn.get("arguments", call.get("arguments"))) or ""))
    return Message(str(raw.get("role") or ""), content if isinstance(content, str) else None, calls,
                   raw.get("tool_call_id"))


def _messages(value: Any) -> list[Message] | None:
    parsed = _json(value)
    if not isinstance(parsed, list):
        return None
    return [m for m in (_genai_parts_message(item) for item in parsed) if m is not None]


def _tool_entry(item: Any) -> dict[str, Any] | None:
    """A tool definition, flat ({name, description, parameters}) or OpenAI's ({type, function: {...}})."""
    if not isinstance(item, dict):
        return None
    fn = item["function"] if isinstance(item.get("function"), dict) else item
    if not fn.get("name"):
        return None
    parameters = fn.get("parameters")
    return {"name": str(fn["name"]), "description": fn.get("description"),
            "parameters": parameters if isinstance(parameters, dict) else {}}


def tool_definitions(value: Any) -> list[dict[str, Any]] | None:
    """`gen_ai.tool.definitions` (JSON text or an array); None when absent or not a list."""
    parsed = _json(value)
    if not isinstance(parsed, list):
        return None
    return [t for t in map(_tool_entry, parsed) if t is not None]


# --- the flattened forms: gen_ai.prompt.N.* and OpenInference's llm.input_messages.N.message.* ---

def _flat_calls(entry: dict[str, Any], prefix: str, name_key: str, args_key: str) -> list[CallRecord]:
    calls = []
    for call in indexed(entry, prefix):
        calls.append(CallRecord(str(call.get("id") or call.get("tool_call.id") or ""),
                                str(call.get(name_key) or ""), _text(call.get(args_key)) or ""))
    return calls


def _flat_messages(attrs: dict[str, Any], prefix: str, openinference: bool) -> list[Message] | None:
    entries = indexed(attrs, prefix)
    if not entries:
        return None
    out = []
    for entry in entries:
        if openinference:
            entry = {k.removeprefix("message."): v for k, v in entry.items()}
            content = entry.get("content")
            if content is None:
                parts = [p.get("message_content.text") for p in indexed(entry, "contents")]
                content = "".join(str(p) for p in parts if p is not None) or None
            calls = _flat_calls(entry, "tool_calls", "tool_call.function.name", "tool_call.function.arguments")
        else:
            content = entry.get("content")
            calls = _flat_calls(entry, "tool_calls", "name", "arguments")
        out.append(Message(str(entry.get("role") or ""), _text(content), calls,
                           entry.get("tool_call_id"), entry.get("finish_reason")))
    return out


def _openinference_tools(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    entries = indexed(attrs, "llm.tools")
    if not entries:
        return None
    return [t for t in (_tool_entry(_json(e.get("tool.json_schema"))) for e in entries) if t is not None]


def _traceloop_tools(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    entries = indexed(attrs, "llm.request.functions")
    if not entries:
        return None
    return [{"name": str(e["name"]), "description": e.get("description"),
             "parameters": p if isinstance(p := _json(e.get("parameters")), dict) else {}}
            for e in entries if e.get("name")]


def read_model_call(span: Span) -> ModelCall:
    """A model call span in whichever convention it was written."""
    a = span.attributes
    reasons = a.get("gen_ai.response.finish_reasons")
    finish = reasons[0] if isinstance(reasons, list) and reasons else (reasons if isinstance(reasons, str) else None)
    model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or a.get("llm.model_name")
    if any(k.startswith("llm.input_messages.") or k.startswith("llm.output_messages.") for k in a) or \
            str(a.get("openinference.span.kind") or "").upper() == "LLM":
        inputs = _flat_messages(a, "llm.input_messages", openinference=True)
        outputs = _flat_messages(a, "llm.output_messages", openinference=True)
        tools = _openinference_tools(a)
        convention = "openinference"
        prompt, completion = _int(a.get("llm.token_count.prompt")), _int(a.get("llm.token_count.completion"))
    elif "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        inputs = _messages(a.get("gen_ai.input.messages"))
        outputs = _messages(a.get("gen_ai.output.messages"))
        system = a.get("gen_ai.system_instructions")
        if inputs is not None and system is not None:
            parsed = _json(system)
            text = "".join(str(p.get("content") or "") for p in parsed if isinstance(p, dict)) \
                if isinstance(parsed, list) else _text(system)
            inputs = [Message("system", text), *inputs]
        tools = tool_definitions(a.get("gen_ai.tool.definitions"))
        convention = "gen_ai"
        prompt, completion = _usage(a)
    else:
        inputs = _flat_messages(a, "gen_ai.prompt", openinference=False)
        outputs = _flat_messages(a, "gen_ai.completion", openinference=False)
        tools = tool_definitions(a.get("gen_ai.tool.definitions")) or _traceloop_tools(a)
        convention = "gen_ai (prompt.N)"
        prompt, completion = _usage(a)
    if tools is None:
        tools = tool_definitions(a.get("gen_ai.tool.definitions"))
    if isinstance(a.get("evals.convention"), str):  # a span converted from another format (traces/agents_sdk.py)
        convention = a["evals.convention"]
    if outputs and finish is None:
        finish = outputs[0].finish_reason
    return ModelCall(span, convention, inputs, outputs, tools, str(model) if model else None, prompt, completion,
                     str(finish) if finish is not None else None)


def _usage(a: dict[str, Any]) -> tuple[int, int]:
    prompt = a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))
    completion = a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
    return _int(prompt), _int(completion)


def read_tool_run(span: Span) -> ToolRun:
    a = span.attributes
    name = a.get("gen_ai.tool.name") or a.get("tool.name") or span.name.removeprefix("execute_tool").strip()
    call_id = a.get("gen_ai.tool.call.id") or a.get("tool_call.id") or a.get("tool.call.id")
    arguments = a.get("gen_ai.tool.call.arguments", a.get("tool.parameters", a.get("input.value")))
    result = a.get("gen_ai.tool.call.result", a.get("output.value"))
    return ToolRun(span, str(call_id) if call_id else None, str(name or ""), _text(arguments), _text(result))


def agent_name(span: Span) -> str | None:
    a = span.attributes
    name = a.get("gen_ai.agent.name") or a.get("agent.name")
    if name:
        return str(name)
    if str(a.get("openinference.span.kind") or "").upper() == "AGENT" or \
            a.get("gen_ai.operation.name") == "invoke_agent":
        return span.name.removeprefix("invoke_agent").strip() or None
    return None


def names_agent(span: Span) -> bool:
    """Whether a span names its agent in an attribute (not only by the span's name)."""
    return bool(span.attributes.get("gen_ai.agent.name") or span.attributes.get("agent.name"))


def handed_by(span: Span) -> str | None:
    """The agent that handed work to this agent span, when the span names it (OpenInference's
    `graph.node.parent_id`, which the Agents SDK's handoffs become)."""
    value = span.attributes.get("graph.node.parent_id")
    return str(value) if value else None


def conversation_key(span: Span) -> str | None:
    for key in CONVERSATION_KEYS:
        value = span.attributes.get(key)
        if value not in (None, ""):
            return str(value)
    return None
