"""A plain openai-SDK agent run by evals-cli as a command agent (suites/external_agent.yaml).

It reads {"type": "user", "content": ...} lines on stdin, answers each with one {"type": "assistant", ...}
line on stdout, and reports what it did as OpenTelemetry spans in the GenAI semantic conventions (invoke_agent,
chat, execute_tool) through the OTLP/HTTP endpoint the usual variables name (evals-cli sets them). Its model:
OPENAI_BASE_URL / OPENAI_API_KEY / AGENT_MODEL. Its tools read a tiny made-up project. What it imports installs
with `pip install 'evals-cli[otel]'`."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any

from openai import OpenAI
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

FILES = {"config.toml": "[db]\nhost = \"db.internal\"\nport = 5433\n", "README.md": "# demo\nSettings: config.toml\n"}
TOOLS = [
    {"type": "function", "function": {"name": "list_files", "description": "List the project's files",
                                      "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "read_file", "description": "Read one file of the project",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                     "required": ["path"]}}},
]
SYSTEM = "You answer questions about a project. Use the tools to look; answer in one short sentence."
MAX_STEPS = 6


class ProtobufExporter(SpanExporter):
    """OTLP/HTTP protobuf with the SDK's own encoder (stands in for opentelemetry-exporter-otlp-proto-http)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def export(self, spans: Any) -> SpanExportResult:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        body = encode_spans(spans).SerializeToString()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/x-protobuf"})
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def tracer() -> trace.Tracer:
    provider = TracerProvider(resource=Resource.create({"service.name": "external-agent"}))
    url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if url:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter: SpanExporter = OTLPSpanExporter()
        except ImportError:
            exporter = ProtobufExporter(url)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return trace.get_tracer("external-agent")


def parts(message: dict[str, Any]) -> dict[str, Any]:
    """An openai chat message in the GenAI conventions' message form."""
    if message["role"] == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": message["tool_call_id"],
                                           "response": message["content"]}]}
    out = [{"type": "text", "content": message["content"]}] if message.get("content") else []
    out += [{"type": "tool_call", "id": c["id"], "name": c["function"]["name"],
             "arguments": json.loads(c["function"]["arguments"] or "{}")} for c in message.get("tool_calls") or []]
    return {"role": message["role"], "parts": out}


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    if name == "list_files":
        return json.dumps(sorted(FILES))
    if name == "read_file":
        return FILES.get(str(arguments.get("path")), f"no such file: {arguments.get('path')}")
    return f"unknown tool {name}"


def answer(client: OpenAI, model: str, tracer_: trace.Tracer, messages: list[dict[str, Any]]) -> str:
    definitions = json.dumps([t["function"] | {"type": "function"} for t in TOOLS])
    with tracer_.start_as_current_span("invoke_agent project-helper", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "project-helper",
            "gen_ai.tool.definitions": definitions}):
        for _ in range(MAX_STEPS):
            with tracer_.start_as_current_span(f"chat {model}") as span:
                reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, max_tokens=256)
                message = reply.choices[0].message.model_dump(exclude_none=True)
                message.pop("refusal", None)
                span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                                     "gen_ai.input.messages": json.dumps([parts(m) for m in messages]),
                                     "gen_ai.output.messages": json.dumps([parts(message)]),
                                     "gen_ai.response.finish_reasons": [reply.choices[0].finish_reason or "stop"]})
                if reply.usage is not None:
                    span.set_attributes({"gen_ai.usage.input_tokens": reply.usage.prompt_tokens,
                                         "gen_ai.usage.output_tokens": reply.usage.completion_tokens})
            messages.append(message)
            if not message.get("tool_calls"):
                return str(message.get("content") or "")
            for call in message["tool_calls"]:
                arguments = json.loads(call["function"]["arguments"] or "{}")
                result = run_tool(call["function"]["name"], arguments)
                with tracer_.start_as_current_span(f"execute_tool {call['function']['name']}", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call["function"]["name"],
                        "gen_ai.tool.call.id": call["id"], "gen_ai.tool.call.arguments": json.dumps(arguments),
                        "gen_ai.tool.call.result": result}):
                    pass
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return "I could not finish within my step limit."


def main() -> int:
    client = OpenAI(base_url=os.environ.get("OPENAI_BASE_URL"), api_key=os.environ.get("OPENAI_API_KEY", "none"))
    model = os.environ.get("AGENT_MODEL", "agent")
    tracer_ = tracer()
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for line in sys.stdin:
        event = json.loads(line)
        if event.get("type") == "user":
            messages.append({"role": "user", "content": event["content"]})
            text = answer(client, model, tracer_, messages)
            print(json.dumps({"type": "assistant", "content": text}), flush=True)
    trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]  # flushes the spans before exiting
    return 0


if __name__ == "__main__":
    sys.exit(main())
