"""A production agent as `evals watch` sees it: a small tool-calling loop through the real openai client (against
the scripted test server), instrumented with the real OpenTelemetry SDK the way the GenAI semantic conventions
describe it (an `invoke_agent` root span carrying gen_ai.conversation.id, a `chat` span per model call with its
input and output messages, an `execute_tool` span per tool call), and exported over OTLP/HTTP (protobuf, or
JSON through the same SDK spans) to the watch endpoint.

`Agent(url).converse(conversation_id, question)` runs one conversation; `flush()` sends what the batch
processor holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from openai import OpenAI
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file of the project",
                                           "parameters": {"type": "object",
                                                          "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}}]


def parts(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message in the GenAI conventions' message form (role, parts, finish_reason)."""
    out: list[dict[str, Any]] = []
    if message.get("role") == "tool":
        out.append({"type": "tool_call_response", "id": message.get("tool_call_id"),
                    "response": message.get("content")})
    elif message.get("content"):
        out.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls") or []:
        out.append({"type": "tool_call", "id": call["id"], "name": call["function"]["name"],
                    "arguments": json.loads(call["function"].get("arguments") or "{}")})
    return {"role": message.get("role"), "parts": out}


def read_file(arguments: dict[str, Any]) -> str:
    return {".env": "DB_HOST=db.internal\nPORT=8080"}.get(str(arguments.get("path")), "no such file")


class Agent:
    def __init__(self, watch_url: str, model_url: str, *, headers: dict[str, str] | None = None,
                 max_steps: int = 6, tools: dict[str, Callable[[dict[str, Any]], str]] | None = None,
                 certificate: str | None = None) -> None:
        """`certificate`: the CA file the exporter trusts (a watch endpoint over TLS), and nothing else: the
        session ignores REQUESTS_CA_BUNDLE, which requests would otherwise put in its place."""
        import requests

        self.provider = TracerProvider(resource=Resource.create({"service.name": "watched-agent"}))
        session = requests.Session()
        session.trust_env = certificate is None
        self.exporter = OTLPSpanExporter(endpoint=f"{watch_url}/v1/traces", headers=headers or {}, timeout=10,
                                         certificate_file=certificate, session=session)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter, schedule_delay_millis=50))
        self.tracer = self.provider.get_tracer("watched-agent")
        self.client = OpenAI(base_url=model_url, api_key="test-key", max_retries=0)
        self.max_steps = max_steps
        self.tools = tools or {"read_file": read_file}

    def converse(self, conversation_id: str, question: str) -> str | None:
        """One conversation; its final answer (None: stopped at max_steps)."""
        root_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                      "gen_ai.conversation.id": conversation_id, "gen_ai.tool.definitions": json.dumps(TOOLS)}
        with self.tracer.start_as_current_span("invoke_agent support", attributes=root_attrs):
            messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
            for _ in range(self.max_steps):
                message = self._chat(messages)
                if not message.get("tool_calls"):
                    return str(message.get("content") or "")
                for call in message["tool_calls"]:
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": self._tool(call)})
        return None

    def _chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted",
                 "gen_ai.input.messages": json.dumps([parts(m) for m in messages])}
        with self.tracer.start_as_current_span("chat scripted", attributes=attrs) as span:
            reply = self.client.chat.completions.create(model="scripted", messages=messages,  # type: ignore[arg-type]
                                                        tools=TOOLS)  # type: ignore[arg-type]
            choice = reply.choices[0]
            message = choice.message.model_dump(exclude_none=True)
            messages.append(message)
            span.set_attribute("gen_ai.output.messages",
                               json.dumps([{**parts(message), "finish_reason": choice.finish_reason or "stop"}]))
            span.set_attribute("gen_ai.response.finish_reasons", [choice.finish_reason or "stop"])
            span.set_attribute("gen_ai.response.model", reply.model)
            if reply.usage is not None:
                span.set_attribute("gen_ai.usage.input_tokens", reply.usage.prompt_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", reply.usage.completion_tokens)
        return message

    def _tool(self, call: dict[str, Any]) -> str:
        name, raw = call["function"]["name"], call["function"].get("arguments") or "{}"
        attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call["id"],
                 "gen_ai.tool.call.arguments": raw}
        with self.tracer.start_as_current_span(f"execute_tool {name}", attributes=attrs) as span:
            tool = self.tools.get(name)
            result = tool(json.loads(raw)) if tool is not None else f"unknown tool {name}"
            span.set_attribute("gen_ai.tool.call.result", result)
        return result

    def flush(self) -> bool:
        return self.provider.force_flush(10_000)

    def close(self) -> None:
        self.provider.shutdown()
        self.client.close()
