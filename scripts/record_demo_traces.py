"""Records suites/demo.traces.otlp.jsonl: OpenTelemetry traces of the demo agent, as a production deployment of
it would write them, for the shipped traces example (suites/traces.yaml, `make eval-traces`).

The demo suite's own agent loop (the openai_chat target, through the real openai client) runs under
opentelemetry-instrumentation-openai-v2 (the GenAI semantic conventions, content captured on spans) against the
demo recording, served on 127.0.0.1 by the test's scripted server answering each request with the response
evals' replay would give it (same recording key), so every model reply is the real model's (Qwen2.5-Coder-1.5B)
and nothing leaves the machine. (`--replay` itself answers without the openai client, so an instrumentation of
the client would see nothing.) What the instrumentation leaves to the application is added the way
an application adds it: an `invoke_agent` span per conversation (gen_ai.conversation.id = the sample id,
gen_ai.agent.name, gen_ai.tool.definitions) and an `execute_tool` span per tool call. The spans are written as
OTLP/JSON lines as tests/fixtures/traces/record.py writes them (the SDK's encoder, hex ids).

    .venv/bin/python scripts/record_demo_traces.py     # (make record-demo-traces) needs the dev install
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "suites" / "demo.traces.otlp.jsonl"


def main() -> int:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    import httpx2

    sys.modules.setdefault("httpx", httpx2)  # openai 3 runs on httpx2; the instrumentation imports httpx's URL
    import json

    from opentelemetry import trace
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from evals_cli.endpoints.keys import body_key
    from evals_cli.endpoints.replay import Recording
    from evals_cli.endpoints.secrets import Redactor
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.run import run
    from evals_cli.targets.episode import Episode
    from evals_cli.tools.mock import MockToolbox
    from tests.fixtures.traces.record import otlp_json_lines
    from tests.scripted_server import Reply, ScriptedServer

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "demo-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("demo-agent")

    agent_run = Episode.run
    tool_call = MockToolbox.call

    async def traced_run(self: Episode) -> Any:  # one episode per sample: the agent's invocation span
        definitions = [t["function"] | {"type": "function"} for t in MockToolbox(self.target.tools, None).schemas()]
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "demo",
                      "gen_ai.conversation.id": str(self.sample.id), "gen_ai.tool.definitions": json.dumps(definitions)}
        with tracer.start_as_current_span("invoke_agent demo", attributes=attributes):
            return await agent_run(self)

    def traced_call(self: MockToolbox, call_id: str, name: str, raw_arguments: str) -> Any:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                      "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": raw_arguments or ""}
        with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
            record = tool_call(self, call_id, name, raw_arguments)
            span.set_attribute("gen_ai.tool.call.result", record.result)
            if record.is_error:
                span.set_status(trace.Status(trace.StatusCode.ERROR, "tool error"))
            return record

    Episode.run = traced_run  # type: ignore[method-assign]
    MockToolbox.call = traced_call  # type: ignore[method-assign]
    recording = Recording(ROOT / "suites" / "demo.recording.jsonl")

    def replay(path: str, body: dict[str, Any]) -> Any:
        api_path = path.split("/v1/", 1)[-1].lstrip("/")
        _, entry = recording.next(body_key("POST", api_path, body, Redactor()), api_path, body)
        return Reply(entry["response"], status=entry.get("status", 200))

    server = ScriptedServer(replay).start()
    out = Path(os.environ.get("TRACES_OUT", OUT))
    scratch = out.parent / ".demo-traces-run"
    try:
        run(ROOT / "suites" / "demo.yaml", RunOptions(output=scratch, base_url=server.url, no_judge=True,
                                                       concurrency=1))
    finally:
        server.stop()
        Episode.run = agent_run  # type: ignore[method-assign]
        MockToolbox.call = tool_call  # type: ignore[method-assign]
        import shutil

        if not os.environ.get("KEEP_RUN"):
            shutil.rmtree(scratch, ignore_errors=True)
    spans = list(exporter.get_finished_spans())
    out.write_text("".join(line + "\n" for line in otlp_json_lines(spans)), encoding="utf-8")
    print(f"{out}: {len(spans)} spans")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
